--[[
  _claim: bclaim's steps that need nothing of its call but their arguments. Its Function library makes
  them once, at FUNCTION LOAD; a local function of its body is made afresh each call.
  Suffixes used here: active, leases
]]
--- @include "_bury"
--- @include "_checks"
--- @include "_counters"
--- @include "_defaults"
--- @include "_journal"
--- @include "_ready_batch"
--- @include "_record"
-- What makes a claimed job's fields unusable, or nil and the lease in ms: f = fn, lease, attempts,
-- max_attempts (nil: the default), group. Each tonumber of a string is a strtod, twice, and counts on
-- a claim's path: the hot path parses the lease here once and a left-out max_attempts never.
local function claim_fault(fn, lease, attempts, max_attempts, group)
  if not fn or fn == '' then return 'fn missing' end
  if not lease then return 'lease missing' end
  local ms = tonumber(lease)
  if not ms or ms ~= math.floor(ms) then return 'lease is not a whole number of ms: ' .. string.sub(lease, 1, 40) end
  if ms < 1 then return 'lease under 1 ms' end
  if attempts and not tonumber(attempts) then return 'attempts is not a number' end
  if max_attempts and not tonumber(max_attempts) then return 'max_attempts is not a number' end
  if not group then return 'group missing or not its lane' end
  return nil, ms
end

-- Lease one popped job by its whole record (a hash, or a packed one that needs more than its head): the
-- token, the lease's expiry, then the reply's items 2 to 5 and 7 (bclaim.lua); nil when it is not leased
-- (gone, a duplicate, or quarantined as corrupt: _checks.lua). The whole record, not an HMGET of the 14
-- fields a claim may need (each costs an argument and a scan of the listpack), in a table with room for the
-- usual 8 fields; a key that holds no record answers an error table.
local function claim_whole(id, key, group, worker, now)
  local r, was_packed = rec_try_all(key)
  if r.err then return unhashed(key, id, r, now) end
  local f = {state = false, fn = false, group = false, lease = false, created = false, v = false, args = false,
    kwargs = false}
  for i = 1, #r, 2 do f[r[i]] = r[i + 1] end
  if f.state ~= 'ready' then  -- gone: nothing to keep; in another state: a duplicate, or corrupt (_checks)
    if f.state then misplaced(key, id, f.state, group, now) end
    return
  end
  -- Fields a mint left out hold their defaults, due its creation time (_defaults.lua).
  local lease, attempts, max_attempts = f.lease, f.attempts, f.max_attempts
  local fault, ms = claim_fault(f.fn, lease, attempts, max_attempts, f.group == group and group)
  if fault then return quarantine(key, id, now, fault) end
  if f.unique and string.sub(f.unique, 1, 1) == 's' then unique_free(id, f.unique) end  -- unique_until="start"
  -- The increment rides on the write below (one command a job less than HINCRBY): atomic all the same.
  local token = attempts and tonumber(attempts) + 1 or 1  -- a job never claimed stores no attempts (DEFAULT)
  local expiry = now + ms
  rec_update(key, r, was_packed, 'state', 'active', 'attempts', token, 'claimed', now, 'lease_until', expiry,
    'worker', worker)
  local d = f.v == FORMAT and DEFAULT or defaults_of(f.v)  -- a current job's defaults inline
  return token, expiry, f['@n'] and journal_after(token, r) or token,  -- a journal's mark: _journal.lua
    f.fn, f.args or d.args, f.kwargs or d.kwargs,
    lease .. '|' .. (max_attempts or d.max_attempts) .. '|' .. (f.backoff or d.backoff) .. '|' ..
    (f.due or f.created or now) .. '|' .. (f.timeout or d.timeout) .. '|' .. (f.spared or '') .. '|' .. (f.meta or '')
end

-- a's items then b's: a itself when b is empty, b when a is (the usual batch has only one of them).
local function joined(a, b)
  if #b == 0 then return a end
  if #a == 0 then return b end
  local all = {unpack(a)}
  for i = 1, #b do all[#all + 1] = b[i] end
  return all
end

-- A member longer than zset-max-listpack-value (64 bytes by default), never a job id: added with a batch
-- of leases and removed in the same call, it makes the lease set a skiplist, and a sorted set never turns
-- back into a listpack as it shrinks (until it is empty and gone). A listpack's ZADD looks for each new
-- member by a walk of the whole set and places it by another: at the 50 to 128 jobs in flight of one
-- busy worker that cost a drained job more server time than its claim's HSET (docs/reference/performance.md).
-- Nothing reads the set between the two commands: no reader ever sees the keel.
local KEEL = 'emq keel: a member this long keeps the lease set a skiplist; see docs/reference/performance.md'
-- A claim of fewer adds no keel: its ZREM is one command more a claim, and a worker that claims fewer at a time
-- keeps a set too small for the walk to cost more than that (concurrency 10: commands a job 6.0 either way, the
-- same server time). A busy worker's first claim of as many converts the set; its smaller claims find it converted.
local KEEL_MIN = 16

-- Add a claim's leases ({expiry, id, ...} for got jobs) to the lease set.
local function leases_add(leases, got)
  local z = ns .. 'leases'
  if got < KEEL_MIN then
    redis.call('ZADD', z, unpack(leases))
    return
  end
  leases[#leases + 1] = 'inf'
  leases[#leases + 1] = KEEL
  redis.call('ZADD', z, unpack(leases))
  redis.call('ZREM', z, KEEL)
end

-- Add each capped group's new leases (taken: group -> leases this call took under its cap) to its
-- active count: one read and one write for the whole batch.
local function active_take(taken)
  local groups, args = {}, {}
  for group, _ in pairs(taken) do groups[#groups + 1] = group end
  if #groups == 0 then return end
  local cur = redis.call('HMGET', ns .. 'active', unpack(groups))
  for i, group in ipairs(groups) do
    args[#args + 1] = group
    args[#args + 1] = tonumber(cur[i] or '0') + taken[group]
  end
  redis.call('HSET', ns .. 'active', unpack(args))
end

-- The ready counter of the groups whose solo this call took (gone), after their HDEL (a recount's
-- lane_len reads it): one delta for all with exact counters, not a ready_batch call a group.
local function gone_settle(gone)
  if #gone == 0 then return end
  if tally_mode() == 'exact' then
    ready_batch(gone[1], -#gone)  -- exact: one delta, settled with the others
  else
    for i = 1, #gone do ready_add(gone[i], -1) end
  end
end
