--[[
  cancel: end waiting or running jobs in the terminal state "cancelled", kept and trimmed like completed.
  A job waiting for its parents leaves the waiting set; a scheduled job leaves the schedule set; a ready one leaves its lane (LREM: O(its place in the
  lane), cancelling is rare), and an emptied lane leaves the lane set at once and the ring at the
  next claim that reaches it (no scan of the ring); neither is ever claimed. An active job is cancelled at once: its lease goes and, under a cap, its group's
  active count drops (the group gets its slot back); its worker hears it at the next renewal (extend
  answers "cancelled") and stops the attempt, whose late finish answers stale.
  A finished job (completed, dead, cancelled) is left as it is and its state is answered.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] ttl       ms a cancelled job is kept
  ARGV[2] keep      at most this many cancelled jobs are kept
  ARGV[3..] id      one job id per argument (1..1000 of them)
  Derived: job:<id>, scheduled, lane:<group>, counters, recount:seen, lanes, leases, held, active, caps,
           paused:groups,
           cancelled, wake, stats, waiting, deps:<id>, and what a flow's end touches (_flow.lua)
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it had finished
]]
local ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local out, cancelled = {}, 0
local line = 'emq.errors.Cancelled: cancelled'

-- Take a ready id out of its lane; a lane left empty leaves the lane set, and the ring when bclaim
-- next comes round to it (no scan of the ring here: _counters.lua).
local function unlane(id, group)
  local left
  if redis.call('HGET', ns .. 'solo', group) == id then  -- its group's solo (_counters.lua)
    left = redis.call('HDEL', ns .. 'solo', group)
  else
    left = prio_unlane(group, id)  -- the id, or its marker and zset entry (_prio.lua)
  end
  ready_add(group, -left)
  if not lane_exists(group) then redis.call('SREM', ns .. 'lanes', group) end
end

for i = 3, #ARGV do
  local id = ARGV[i]
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'group', 'attempts', 'notify', 'unique')
  local state = f[1]
  if state == 'scheduled' then
    redis.call('ZREM', ns .. 'scheduled', id)
  elseif state == 'ready' then
    unlane(id, f[2])
  elseif state == 'active' then
    redis.call('ZREM', ns .. 'leases', id)
    held_release({id})
  elseif state == 'waiting' then
    flow_unwait(id)
  end
  if not state then
    out[#out + 1] = 'missing'
  elseif state ~= 'scheduled' and state ~= 'ready' and state ~= 'active' and state ~= 'waiting' then
    out[#out + 1] = state
  else
    note_error(key, f[3] or DEFAULT.attempts, now, line)
    redis.call('HSET', key, 'state', 'cancelled', 'finished', now, 'error', line, 'cancelled_from', state)
    redis.call('ZADD', ns .. 'cancelled', now, id)
    cancelled = cancelled + 1
    out[#out + 1] = 'ok'
    emit('cancelled', id)
    if f[5] then unique_free(id, f[5]) end
    if f[4] then flow_finished(id, 'cancelled', now) end
  end
end
if cancelled > 0 then
  count(now, 'cancelled', cancelled)
  trim('cancelled', now, ttl, keep, cancelled)
end
flush_events()
return out
