--[[
  _prelude: helpers shared by every script; scripts.py prepends this file to each one.
  KEYS[1] ns  the queue's namespace <prefix>:{<queue>}: (not a key itself; every key a
              script touches is ns .. suffix, so all of them share the queue's hash tag)
  KEYS[2] guard  ns .. 'guard', never read or written: scripts.run declares it so that a node
              migrating the queue's slot refuses the script (TRYAGAIN) rather than run it
              against half the keys; each operation's header lists KEYS[1] only
  Suffixes used here: job:<id>, lane:<group>, solo, ring, ring:in, lanes, caps, active, paused:groups, scheduled,
                      wake, pumpwake, leases, dead, reclaims, stats, unique:<key>
]]
-- ns (KEYS[1]) is bound in _events.lua, loaded before this file; the ready counter and the ring's
-- membership (ready_add, ring_join, ring_drop_*) are _counters.lua's, loaded between them.
-- Defined in _checks.lua (loaded after this file): validation before a write, and quarantine.
local claim_fault, quarantine, misplaced, lease_gone, leased_before_start

-- Read the server clock once per script (Redis 7.0 does not freeze it for a script).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- The fields put_job leaves out of a job's hash while they hold these values, and due while it equals
-- created: a job minted with every default stores fn, state, group, lease and created, about a third of
-- what a queued job costs the server less. Every reader takes an absent field as its default
-- (`f or DEFAULT.<field>`); a job minted with every field (an earlier version) reads the same.
-- emq/core/layout.py keeps the same table for the Python readers (a test compares the two).
local DEFAULT = {args = '[]', kwargs = '{}', attempts = '0', max_attempts = '3', max_stalled = '1',
  backoff = '1,300', timeout = '3600000,0'}

-- Call f with the items of a list, at most 1000 at a time (unpack's limit is a few thousand).
local function each_chunk(list, f)
  if #list <= 1000 then
    if #list > 0 then f(list) end  -- the usual case: the list itself, not a copy
    return
  end
  for i = 1, #list, 1000 do f({unpack(list, i, math.min(i + 999, #list))}) end
end

-- Leave at most one token in a wake list: one parked waiter is enough to start a chain.
-- WAKE_TOKEN: whether the workers' list ('wake') holds a token, once this call knows it, else nil: an
-- LLEN asks. A claim's flags and a mint's priority check learn it without one: their EXISTS of k keys
-- names the wake list k + 1 times after them, so its share of the count (k + 1 when a token waits) stands
-- apart from theirs (a helper to decode it costs a mint 1 % more server instructions: a Lua call each).
-- Only clients pop a wake list (a BLPOP runs between script calls), so what a call learnt holds to its end.
local WAKE_TOKEN = nil
local function wake(suffix)
  local known = nil
  if suffix == 'wake' then known, WAKE_TOKEN = WAKE_TOKEN, true end
  if known == nil then known = redis.call('LLEN', ns .. suffix) > 0 end
  if not known then redis.call('RPUSH', ns .. suffix, '1') end
end

-- A group with a cap that its active jobs have reached must stay off the ring.
local function at_cap(group)
  local cap = redis.call('HGET', ns .. 'caps', group)
  if not cap then return false end
  return tonumber(redis.call('HGET', ns .. 'active', group) or '0') >= tonumber(cap)
end

-- A group held by its rate limit (_flowctl.lua) waits in rout, off the ring, until the Pump frees it.
-- RHOLD: whether the queue has any hold, read once a call (rate_hold sets it when it adds one).
local RHOLD = nil
local function rate_held(group)
  if RHOLD == nil then RHOLD = redis.call('EXISTS', ns .. 'rhold') == 1 end
  if not RHOLD or not redis.call('ZSCORE', ns .. 'rhold', group) then return false end
  redis.call('SADD', ns .. 'rout', group)
  return true
end

-- A group stays off the ring while its lane is paused, it is at its cap, or its rate limit holds it.
local function off_ring(group)
  return redis.call('SISMEMBER', ns .. 'paused:groups', group) == 1 or at_cap(group) or rate_held(group)
end

-- Whether a group belongs on the ring: its lane has work, is not paused and is under its cap.
local function lane_serving(group)
  return lane_exists(group) and not off_ring(group)
end

-- Restore the ring invariant for one group after a manual change (pause, resume, a new cap): on the
-- ring iff lane_serving. Taking it off scans the ring (ring_drop_now), which only these rare changes
-- do. Returns true when the group is on the ring afterwards.
local function ring_fix(group)
  if lane_serving(group) then
    ring_join(group)
    return true
  end
  ring_drop_now(group)
  return false
end

-- A lane whose list was empty got work at its head (front) or tail: it joins the lane set, and the ring
-- unless paused or at its cap. A group in the lane set already had its solo (_counters.lua), which joins
-- the list; its place on the ring or off it stands.
local function lane_joined(group, front)
  if redis.call('SADD', ns .. 'lanes', group) == 0 and lane_unsolo(group, front) then return end
  if not off_ring(group) then ring_join(group) end
end

-- Make an id ready in its group's lane; a lane that was empty joins the ring and the lane set.
-- Whether the queue has groups in priority mode (_prio.lua's PRIO['']) is read with the wake list's token
-- (WAKE_TOKEN: the list named twice), where prio_on and the wake after a push would spend an EXISTS and an LLEN.
local function lane_push(group, id, front)
  local lane = ns .. 'lane:' .. group
  local n
  if PRIO[''] == nil and WAKE_TOKEN == nil then
    local wake_list = ns .. 'wake'
    n = redis.call('EXISTS', ns .. 'prio', wake_list, wake_list)
    PRIO[''], WAKE_TOKEN = n % 2 == 1, n > 1
  end
  if prio_on(group) then n, front = prio_push(lane, group, id)  -- a group in priority mode (_prio.lua)
  elseif front then n = redis.call('LPUSH', lane, id) else n = redis.call('RPUSH', lane, id) end
  ready_add(group, 1)
  if n == 1 then lane_joined(group, front) end
end

-- Append ready ids (at most a few thousand) to a group's plain lane in one RPUSH; a lane that was
-- empty joins the ring. The ready counter takes them through ready_batch: call ready_settle after.
local function lane_append(group, ids)
  local len = redis.call('RPUSH', ns .. 'lane:' .. group, unpack(ids))
  ready_batch(group, #ids)
  if len == #ids then lane_joined(group, false) end
end

-- The groups of a batch mint (two or more) that had no ready work and get one id, not in priority mode,
-- take a solo (_counters.lua): one SMISMEMBER, one HSET and one SADD to the lane set a chunk of groups where
-- each would have cost a list key (and bclaim its LPOP) and an SADD. Returns the set of those groups, which
-- lane_batch's flush puts on the ring; a mint of one group keeps its list.
local function solo_mint(groups, ready_ids)
  local made, pairs_, joined = {}, {}, {}
  each_chunk(groups, function(chunk)
    local had = redis.call('SMISMEMBER', ns .. 'lanes', unpack(chunk))
    for i = 1, #chunk do
      local group = chunk[i]
      local ids = ready_ids[group]
      if had[i] == 0 and #ids == 1 and not prio_on(group) then
        made[group] = true
        joined[#joined + 1] = group
        pairs_[#pairs_ + 1] = group
        pairs_[#pairs_ + 1] = ids[1]
      end
    end
  end)
  each_chunk(pairs_, function(chunk) redis.call('HSET', ns .. 'solo', unpack(chunk)) end)
  each_chunk(joined, function(chunk) redis.call('SADD', ns .. 'lanes', unpack(chunk)) end)
  return made
end

-- Ready ids of a mint, pushed once per group at the end (one RPUSH for a whole chunk of one group),
-- groups in order of first appearance, as one lane_push per job would have ordered them. A job for
-- the lane's front, or for a group in priority mode (_prio.lua), first flushes its group's batch.
-- Returns push(group, id, front) for put_job and flush() for the script's end.
local function lane_batch()
  local ready_ids, groups = {}, {}
  local function flush_group(group)
    local ids = ready_ids[group]
    if #ids == 0 then return end
    lane_append(group, ids)
    ready_ids[group] = {}
  end
  local function push(group, id, front)
    if not ready_ids[group] then
      ready_ids[group] = {}
      groups[#groups + 1] = group
    end
    if front or prio_on(group) then
      flush_group(group)
      return lane_push(group, id, front)
    end
    local ids = ready_ids[group]
    ids[#ids + 1] = id
  end
  local function flush()
    local solo = #groups > 1 and solo_mint(groups, ready_ids) or {}
    for _, group in ipairs(groups) do
      if solo[group] then  -- in the lane set already (solo_mint): lane_joined's ring half, in mint order
        ready_batch(group, 1)
        if not off_ring(group) then ring_join(group) end
      else
        flush_group(group)
      end
    end
    ready_settle()
  end
  return push, flush
end

-- Add delta to a group's active count; a capped group that drops below its cap rejoins the ring,
-- and parked workers are woken for its waiting work. Only a lease claimed under a cap is counted
-- (it is in held, id -> group): an uncapped group's count would decide nothing, and keeping it cost
-- a claim and a finish two hash writes a group (set_cap counts the leases a new cap finds).
-- capped = false says the queue has no caps at all (active_release reads that once a batch).
local function active_add(group, delta, capped)
  local n = redis.call('HINCRBY', ns .. 'active', group, delta)
  if n <= 0 then redis.call('HDEL', ns .. 'active', group) end
  if delta < 0 and capped ~= false then
    local cap = redis.call('HGET', ns .. 'caps', group)
    -- At its cap the group was off the ring (bclaim took it off), so rejoining needs no scan.
    if cap and n - delta >= tonumber(cap) and n < tonumber(cap) and lane_serving(group) then
      ring_join(group)
      wake('wake')
    end
  end
  return n
end

-- Settle per-group active decrements gathered over a batch: {group = count}.
local function active_release(counts)
  local capped = redis.call('EXISTS', ns .. 'caps') == 1
  for group, k in pairs(counts) do active_add(group, -k, capped) end
end

-- The leases of ids ended (finished, released, reclaimed, cancelled, gone): those counted against
-- their group's cap leave held and give their count back; one HMGET and one HDEL a chunk of ids.
local function held_release(ids)
  if #ids == 0 or redis.call('EXISTS', ns .. 'held') == 0 then return end
  local counts = {}
  each_chunk(ids, function(chunk)
    for _, group in ipairs(redis.call('HMGET', ns .. 'held', unpack(chunk))) do
      if group then counts[group] = (counts[group] or 0) + 1 end
    end
    redis.call('HDEL', ns .. 'held', unpack(chunk))
  end)
  active_release(counts)
end

-- Put an id in the schedule set; wake the Pump when it became the earliest due time.
local function schedule(id, due)
  redis.call('ZADD', ns .. 'scheduled', due, id)
  local head = redis.call('ZRANGE', ns .. 'scheduled', 0, 0)
  if head[1] == id then wake('pumpwake') end
end

-- Append one attempt's error line and its worker to the job's bounded history (newest last, at most 10).
local function note_error(key, attempt, at, line)
  local raw = redis.call('HGET', key, 'errors')
  local list = {}
  if raw then  -- a corrupt history is restarted, never an error that stops the caller's batch
    local ok, old = pcall(cjson.decode, raw)
    if ok and type(old) == 'table' then list = old end
  end
  local worker = redis.call('HGET', key, 'worker') or ''
  list[#list + 1] = {attempt = tonumber(attempt), at = at, error = line, worker = worker}
  while #list > 10 do table.remove(list, 1) end
  redis.call('HSET', key, 'errors', cjson.encode(list))
end

-- First line of an error text (the exception line above its traceback).
local function first_line(text)
  return string.match(text, '^[^\n]*') or text
end

-- Retention of a set of finished jobs (done, cancelled): drop what is older than ttl ms or over keep,
-- at most added + 100 a call (a bounded slice), with their hashes.
local function trim(suffix, now, ttl, keep, added)
  local z = ns .. suffix
  local old = redis.call('ZCOUNT', z, '-inf', now - ttl)
  local excess = math.min(math.max(old, redis.call('ZCARD', z) - keep), added + 100)
  if excess > 0 then
    local victims = redis.call('ZRANGE', z, 0, excess - 1)
    for j = 1, #victims do victims[j] = ns .. 'job:' .. victims[j] end
    redis.call('DEL', unpack(victims))
    redis.call('ZREMRANGEBYRANK', z, 0, excess - 1)
  end
end

-- Let a unique key go, if the job still holds it (a later mint may own it by now); spec is the
-- job's "unique" field, "<s|f>|<key>" (_flowctl.lua's unique_mint writes it).
local function unique_free(id, spec)
  local key = ns .. 'unique:' .. string.sub(spec, 3)
  if redis.call('GET', key) == id then redis.call('DEL', key) end
end

-- Move a job to the dead-letter set. However it dies (failed, stalled, corrupt, a flow's parent
-- failed), its unique key frees at once rather than when its window ends.
local function bury(key, id, now, error_text, reason)
  local spec = redis.call('HGET', key, 'unique')
  redis.call('HSET', key, 'state', 'dead', 'error', error_text, 'finished', now, 'reason', reason)
  redis.call('ZADD', ns .. 'dead', now, id)
  if spec then unique_free(id, spec) end
end

-- Count outcomes in the stats hash and in the current minute's bucket (kept ~65 min for the chart).
local function count(now, field, k)
  if k <= 0 then return end
  redis.call('HINCRBY', ns .. 'stats', field, k)
  if field == 'completed' or field == 'failed' then
    local minute = ns .. 'minute:' .. math.floor(now / 60000)
    -- Only this writes a bucket, so its expiry is set by the first count of each field (one command
    -- a finish less): a bucket never exists without one.
    if redis.call('HINCRBY', minute, field, k) == k then redis.call('PEXPIRE', minute, 3900000) end
  end
end

-- Promote up to limit due ids from the schedule set into their lanes; returns how many moved.
local function promote_due(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', ns .. 'scheduled', '-inf', now, 'LIMIT', 0, limit)
  if #ids == 0 then return 0 end
  for _, id in ipairs(ids) do
    local key = ns .. 'job:' .. id
    local f = redis.call('HMGET', key, 'state', 'group', 'priority')
    if f[1] == 'scheduled' and f[2] then
      redis.call('HSET', key, 'state', 'ready')
      lane_push(f[2], id, (tonumber(f[3] or '0') or 0) > 0)
      emit('ready', id)
    elseif f[1] == 'scheduled' then
      quarantine(key, id, now, 'group missing')
    elseif f[1] then
      misplaced(key, id, f[1], f[2], now)
    end
  end
  redis.call('ZREM', ns .. 'scheduled', unpack(ids))
  wake('wake')
  return #ids
end

-- Reclaim up to limit leases expired at now: back to the head of the lane, or dead as stalled.
-- A lease granted before the server (re)started is not reclaimed: it gets one lease period from
-- the start, so workers that held jobs through the outage renew or finish them first. A job whose
-- hash is gone releases its group's count; a job not active under a lease is quarantined (_checks).
-- Returns the reclaimed ids.
local function reclaim_expired(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', ns .. 'leases', '-inf', now, 'LIMIT', 0, limit)
  if #ids == 0 then return ids end
  local ready, dead, out, gone, kept = 0, 0, {}, {}, {}
  for _, id in ipairs(ids) do
    local key = ns .. 'job:' .. id
    local f = redis.call('HMGET', key, 'state', 'group', 'stalled', 'max_stalled', 'worker', 'attempts', 'notify',
      'claimed', 'renewed', 'lease_until')
    local again = f[1] == 'active' and leased_before_start(now, f[9] or f[8], f[10])
    if not again then gone[#gone + 1] = id end
    if not f[1] then
      lease_gone(id)
    elseif again then
      kept[#kept + 1] = again
      kept[#kept + 1] = id
    elseif f[1] ~= 'active' or not f[2] then
      if f[1] ~= 'active' then misplaced(key, id, f[1], f[2], now) else quarantine(key, id, now, 'group missing') end
    else
      out[#out + 1] = id
      local stalled = (tonumber(f[3] or '0') or 0) + 1
      local line = 'stalled: lease expired (worker ' .. (f[5] or '?') .. ')'
      redis.call('HSET', key, 'stalled', stalled, 'reclaimed_at', now, 'reclaimed_from', f[5] or '')
      redis.call('ZADD', ns .. 'reclaims', now, id)
      note_error(key, tonumber(f[6] or DEFAULT.attempts) or 0, now, line)
      if stalled > (tonumber(f[4] or DEFAULT.max_stalled) or 1) then
        bury(key, id, now, line, 'stalled')
        dead = dead + 1
        emit('stalled', id, 'dead')
        if f[7] then flow_finished(id, 'dead', now) end
      else
        redis.call('HSET', key, 'state', 'ready')
        lane_push(f[2], id, true)
        ready = ready + 1
        emit('stalled', id, 'ready')
      end
    end
  end
  if #kept > 0 then redis.call('ZADD', ns .. 'leases', 'XX', unpack(kept)) end
  if #gone == 0 then return out end
  redis.call('ZREM', ns .. 'leases', unpack(gone))
  held_release(gone)
  redis.call('ZREMRANGEBYRANK', ns .. 'reclaims', 0, -1001)
  count(now, 'reclaimed', ready + dead)
  count(now, 'dead', dead)
  if ready > 0 then wake('wake') end
  return out
end

-- ARGV fields per job in mint's layout: id, if_absent, fn, args, kwargs, group, due, max_attempts,
-- lease, max_stalled, backoff, origin, priority, meta, timeout (engine.MintSpec.argv builds it).
local JOB_FIELDS = 15

-- The fields put_job writes only when they differ from DEFAULT: name, then ARGV offset in the job's fields.
local OPTIONAL = {'args', 4, 'kwargs', 5, 'max_attempts', 8, 'max_stalled', 10, 'backoff', 11, 'timeout', 15}

-- The due time of a mint's due spec: "" now, "+<ms>" after a delay, "@<epoch ms>".
local function due_at(spec, now)
  if spec == '' then return now end
  local v = tonumber(string.sub(spec, 2))
  if string.sub(spec, 1, 1) == '+' then return now + v end
  return v
end

-- Append a field and its value to a list of HSET arguments.
local function put(h, name, value)
  local n = #h
  h[n + 1] = name
  h[n + 2] = value
end

-- The HSET arguments of a new job from its ARGV fields at b: the fields every job has, then the
-- optional ones that differ from DEFAULT, due unless it is now, origin, priority and meta when given.
local function job_hash(b, state, now, due, priority)
  local h = {'fn', ARGV[b + 3], 'group', ARGV[b + 6], 'state', state, 'lease', ARGV[b + 9], 'created', now}
  for i = 1, #OPTIONAL, 2 do
    local v = ARGV[b + OPTIONAL[i + 1]]
    if v ~= DEFAULT[OPTIONAL[i]] then put(h, OPTIONAL[i], v) end
  end
  if due ~= now then put(h, 'due', due) end
  if ARGV[b + 12] ~= '' then put(h, 'origin', ARGV[b + 12]) end
  if priority ~= 0 then put(h, 'priority', priority) end
  if ARGV[b + 14] ~= '' then put(h, 'meta', ARGV[b + 14]) end
  return h
end

-- Create one job from the JOB_FIELDS ARGV fields at ARGV[b+1..]; if_absent forces keep-if-exists on.
-- A ready job goes to push(group, id, front) (lane_push, or mint's batching); front = priority > 0
-- puts it at the head of its lane (Django tasks' priority; see backends.py). Returns created 0|1
-- and whether the job is ready now; mint and repeat_mint share it.
local function put_job(b, now, if_absent, push)
  local id, group = ARGV[b + 1], ARGV[b + 6]
  local key = ns .. 'job:' .. id
  if (if_absent or ARGV[b + 2] == '1') and redis.call('EXISTS', key) == 1 then return 0, false end
  local due = due_at(ARGV[b + 7], now)
  local state = 'ready'
  if due > now then state = 'scheduled' end
  local priority = tonumber(ARGV[b + 13])
  redis.call('HSET', key, unpack(job_hash(b, state, now, due, priority)))
  if priority ~= 0 then prio_mark(group) end  -- its group's ready jobs go through a sorted set from now on (_prio.lua)
  if state == 'ready' then
    push(group, id, priority > 0)
    return 1, true
  end
  schedule(id, due)
  return 1, false
end
