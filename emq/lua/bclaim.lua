--[[
  bclaim: lease up to ARGV[1] ready jobs in one round trip, rotating the ring of lanes.
  Each claim takes the lane at the ring's head and rotates it to the tail, so groups share
  the queue fairly even inside one batch; a lone lane is popped in one LPOP. A lane found empty
  (a cancel emptied it) or at its cap leaves the ring from its tail, where it has just been rotated
  (_counters.lua: no scan of the ring). A paused queue answers nothing (one EXISTS, after the idle
  check); paused groups are off the ring already.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] max_jobs  integer 1..1000
  ARGV[2] worker    worker id, recorded on each job
  Rate limits and holds (_flowctl.lua) bound what a group or the queue may start; a group out of room
  leaves the ring until the Pump's tick frees it.
  A popped job whose fields a claim cannot use (fn or lease missing, lease, attempts or max_attempts
  not numbers, group not its lane's, a state other than ready) is checked before any write to it
  and ends dead as "corrupt: <what>" (_checks.lua); the rest of the batch is leased as usual.
  Derived: rates, rhold, rout, rlog:<group>, prio, plane:<group>, ring, ring:in, counters, recount:seen, lanes,
           caps, active, paused, leases, held, dead, wake, pumpwake, pumpnext, stats, job:<id>, lane:<group>
  Returns: {now_ms, then 12 per job: id, token, fn, args, kwargs, lease_ms, max_attempts, backoff,
           group, due_ms, meta, timeout}
           token = the job's attempts after the increment: its fencing token; due_ms = when it became
           due (now - due_ms is its wait in the queue); meta = "" or the JSON object mint stored;
           timeout = "<ms>,<soft ms>" (0: none); a field the job's hash left out is sent as its default
]]
local want, worker = tonumber(ARGV[1]), ARGV[2]
local now = now_ms()
local ring = ns .. 'ring'
local out = {now}
local got, leases, held, taken, drained = 0, {}, {}, {}, {}
local first_expiry = math.huge
local ringlen = redis.call('LLEN', ring)
if ringlen == 0 then return out end  -- nothing ready: the idle worker's claim costs one command
if redis.call('EXISTS', ns .. 'paused') == 1 then return out end
local has_caps = redis.call('EXISTS', ns .. 'caps') == 1
-- Flow control (_flowctl.lua): rate limits or holds in this queue; a whole-queue limit bounds the batch.
local limited = redis.call('EXISTS', ns .. 'rates', ns .. 'rhold') > 0
if limited then
  local q_room = rate_room('', now)
  if q_room and q_room <= 0 then
    rate_exhausted('')
    flush_events()
    return out
  end
  if q_room then want = math.min(want, q_room) end
end

-- How many more jobs a group may start now (nil: no cap).
local function room(group)
  if not has_caps then return nil end
  local cap = redis.call('HGET', ns .. 'caps', group)
  if not cap then return nil end
  local active = tonumber(redis.call('HGET', ns .. 'active', group) or '0')
  return tonumber(cap) - active - (taken[group] or 0)
end

local function lease_one(id, group, capped)
  id = prio_pop(group, id)  -- a marker stands for the first job of the group's priority zset (_prio.lua)
  if not id then return end
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'fn', 'args', 'kwargs', 'lease', 'max_attempts', 'backoff', 'attempts',
    'due', 'meta', 'timeout', 'group', 'unique', 'created')
  if f[1] ~= 'ready' then  -- gone: nothing to keep; in another state: a duplicate, or corrupt (_checks)
    if f[1] then misplaced(key, id, f[1], group, now) end
    return
  end
  -- Fields a mint left out hold their defaults, due its creation time (_prelude.lua's DEFAULT).
  local max_attempts = f[6] or DEFAULT.max_attempts
  local fault = claim_fault(f[2], f[5], f[8], max_attempts, f[12] == group and group)
  if fault then return quarantine(key, id, now, fault) end
  if f[13] and string.sub(f[13], 1, 1) == 's' then unique_free(id, f[13]) end  -- unique_until="start"
  -- The increment rides on the HSET below (one command a job less than HINCRBY): atomic all the same.
  local token = tonumber(f[8] or DEFAULT.attempts) + 1
  local expiry = now + tonumber(f[5])
  redis.call('HSET', key, 'state', 'active', 'attempts', token, 'claimed', now, 'lease_until', expiry,
    'worker', worker)
  emit('active', id, token)
  leases[#leases + 1] = expiry
  leases[#leases + 1] = id
  if capped then  -- the count a lease holds matters only under a cap: held records only those
    held[#held + 1] = id
    held[#held + 1] = group
  end
  first_expiry = math.min(first_expiry, expiry)
  taken[group] = (taken[group] or 0) + 1
  got = got + 1
  if limited then rate_note(group, id .. ':' .. token, now) end
  -- A missing field is false (HMGET), never nil, so ipairs reaches the end; false is sent as nil.
  for _, v in ipairs({id, token, f[2], f[3] or DEFAULT.args, f[4] or DEFAULT.kwargs, f[5], max_attempts,
      f[7] or DEFAULT.backoff, group, f[9] or f[14] or now, f[10] or '', f[11] or DEFAULT.timeout}) do
    out[#out + 1] = v
  end
end

while got < want and ringlen > 0 do
  local group = redis.call('LMOVE', ring, ring, 'LEFT', 'RIGHT')
  local take = 1
  if ringlen == 1 then take = want - got end
  local r = room(group)
  local capped = r ~= nil
  local rr = limited and rate_room(group, now)  -- rate room (_flowctl.lua): nil/false without a limit
  if rr and (not r or rr < r) then r = rr end
  if r and r < take then take = math.max(r, 0) end
  local ids = {}
  if take > 0 then ids = redis.call('LPOP', ns .. 'lane:' .. group, take) or {} end
  if #ids > 0 then ready_batch(group, -#ids) end
  for _, id in ipairs(ids) do lease_one(id, group, capped) end
  if rr and rr - #ids <= 0 then rate_exhausted(group) end
  local empty = #ids < take or take == 0
  if empty then drained[group] = (take > 0) end
  if empty or (r and r - #ids <= 0) then
    ring_drop_tail(group)
    ringlen = ringlen - 1
  end
end

-- A lane popped one at a time may have emptied: drop it from the ring and the lane set.
for group, _ in pairs(taken) do
  if drained[group] == nil and redis.call('EXISTS', ns .. 'lane:' .. group) == 0 then
    drained[group] = true
    if ring_drop_tail(group) > 0 then ringlen = ringlen - 1 end
  end
end
for group, empty in pairs(drained) do
  if empty then
    redis.call('SREM', ns .. 'lanes', group)
    prio_drained(group)
  end
end
ready_settle()

if limited and got > 0 and rate_room('', now) == 0 then rate_exhausted('') end
if got > 0 then
  redis.call('ZADD', ns .. 'leases', unpack(leases))
  if #held > 0 then redis.call('HSET', ns .. 'held', unpack(held)) end
  -- A lease that expires before the Pump's next planned tick moves its duty earlier: wake it
  -- (as schedule() does for due times). The usual lease outlasts the Pump's park: no wake.
  local next_tick = tonumber(redis.call('GET', ns .. 'pumpnext') or '0')
  if first_expiry < next_tick then wake('pumpwake') end
  for group, k in pairs(taken) do redis.call('HINCRBY', ns .. 'active', group, k) end
  count(now, 'claimed', got)
  -- Work left behind: pass the baton to the next parked worker.
  if ringlen > 0 then wake('wake') end
end
flush_events()
return out
