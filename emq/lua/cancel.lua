--[[
  cancel: end waiting or running jobs in the terminal state "cancelled", kept and trimmed like completed.
  A job waiting for its parents, a signal or its children leaves the waiting set (and the schedule set); a scheduled job leaves the schedule set; a ready one leaves its lane (LREM: O(its place in the
  lane), cancelling is rare), and an emptied lane leaves the lane set at once and the ring at the
  next claim that reaches it (no scan of the ring); neither is ever claimed. An active job is cancelled at once: its lease goes and, under a cap, its group's
  active count drops (the group gets its slot back); its worker hears it at once, from one message
  published on the queue's sharded channel (SPUBLISH cancels: JSON [[id, token], ...] of the cancelled
  active jobs; runtime/cancels.py), or at the latest at its next renewal (extend answers "cancelled"),
  and stops the attempt, whose late finish answers stale.
  A finished job (completed, dead, cancelled) is left as it is and its state is answered.
  active count drops (the group gets its slot back); its worker hears it at the next renewal (extend
  answers "cancelled") and stops the attempt, whose late finish answers stale.
  A finished job (completed, dead, cancelled) is left as it is and its state is answered. A job whose
  key holds no hash ends dead as corrupt (_checks.lua; answered "dead"): out of the schedule set, the
  leases and the waiting set; a lane that still holds its id drops it when a claim pops it.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] ttl       ms a cancelled job is kept
  ARGV[2] keep      at most this many cancelled jobs are kept
  ARGV[3..] id      one job id per argument (1..1000 of them)
  Derived: job:<id>, cancels (a sharded channel), scheduled, lane:<group>, counters, recount:seen, lanes, leases, held, active, caps,
  Derived: job:<id>, scheduled, queued, lane:<group>, counters, recount:seen, lanes, leases, held, active, caps,
           paused:groups,
           cancelled, wake, stats, waiting, deps:<id>, unknown, and what a flow's end touches (_flow.lua)
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it had finished
]]
--- @include "_bury"
--- @include "_checks"
--- @include "_clock"
--- @include "_counters"
--- @include "_defaults"
--- @include "_errors"
--- @include "_events"
--- @include "_flow"
--- @include "_held"
--- @include "_prio_take"
--- @include "_record"
--- @include "_serving"
--- @include "_stats"
--- @include "_trim"
--- @include "_unknown"
local ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local out, cancelled, running = {}, 0, {}
local line = 'emq.errors.Cancelled: cancelled'

-- Take a ready id out of its lane; a lane left empty leaves the lane set, and the ring when bclaim
-- next comes round to it (no scan of the ring here: _ring.lua).
local function unlane(id, group)
  local left
  if redis.call('HGET', ns .. 'solo', group) == id then  -- its group's solo (_solo.lua)
    left = redis.call('HDEL', ns .. 'solo', group)
  else
    left = prio_unlane(group, id)  -- the id, or its marker and zset entry (_prio.lua)
  end
  ready_add(group, -left)
  if not lane_exists(group) then redis.call('SREM', ns .. 'lanes', group) end
end

for i = 3, #ARGV do
  local id = ARGV[i]
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'group', 'attempts', 'notify', 'unique', 'unknown', 'fn', 'v')
  local state = f[1]
  if f.err then  -- the key holds no hash: out of every set but a lane (its group is unknown), dead as corrupt
    redis.call('ZREM', ns .. 'scheduled', id)
    leases_end({id})
    flow_unwait(id)
    unhashed(key, id, f, now)
    state = 'dead'
  elseif state == 'scheduled' then
    redis.call('ZREM', ns .. 'scheduled', id)
  elseif state == 'ready' then
    unlane(id, f[2])
  elseif state == 'active' then
    leases_end({id})
    running[#running + 1] = {id, tonumber(f[3])}
  elseif state == 'waiting' then
    flow_unwait(id)
    redis.call('ZREM', ns .. 'scheduled', id)  -- a wait for a signal with a timeout (_suspend.lua)
  end
  if not state then
    out[#out + 1] = 'missing'
  elseif state ~= 'scheduled' and state ~= 'ready' and state ~= 'active' and state ~= 'waiting' then
    out[#out + 1] = state
  else
    note_error(key, f[3] or defaults_of(f[8]).attempts, now, line)
    rec_set(key, 'state', 'cancelled', 'finished', now, 'error', line, 'cancelled_from', state)
    redis.call('ZADD', ns .. 'cancelled', now, id)
    cancelled = cancelled + 1
    out[#out + 1] = 'ok'
    emit('cancelled', id)
    if f[5] then unique_free(id, f[5]) end
    if f[6] then unknown_mark(key, f[7], now, false) end  -- held for its name (finish.lua): no longer
    if f[4] then flow_finished(id, 'cancelled', now, f[4]) end
  end
end
-- pcall: a server that refuses it (an ACL user without channels) still cancels; the renewal tells the worker.
if #running > 0 then redis.pcall('SPUBLISH', ns .. 'cancels', cjson.encode(running)) end
if cancelled > 0 then
  count(now, 'cancelled', cancelled)
  trim('cancelled', now, ttl, keep, cancelled)
end
flush_events()
return out
