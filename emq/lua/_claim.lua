--[[
  _claim: bclaim's steps that need nothing of its call but their arguments. Its Function library makes
  them once, at FUNCTION LOAD; a local function of its body is made afresh each call.
  Suffixes used here: active, leases
]]
--- @include "_counters"
--- @include "_ready_batch"
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
