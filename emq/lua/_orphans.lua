--[[
  _orphans: jobs that wait for a parent whose record vanished (deleted by hand, evicted, lost in a
  failover) would wait for ever: no end of that parent will ever tell them. The leading Pump's tick
  looks at a few waiting jobs at a time, a cursor going round the waiting set: a parent in this queue
  that is neither a job nor a batch any more settles the child as "missing" (_flow.lua's settle: dead
  with reason "parent <id> missing" unless it runs whatever its parents did). At most ORPHAN_BATCH
  waiting jobs, and their pending parents, once every ORPHAN_EVERY ms: bounded work, whatever the
  number waiting, and nothing for a queue with none (the tick learns that with its relay's, in one
  EXISTS). A pass over n waiting jobs takes n / ORPHAN_BATCH s at least.
  A parent in another queue is another slot: those (child, parent, its queue) are handed back to the
  Pump, which asks the parent's queue again (flow_link answers "missing", or the outcome of a parent
  whose relay was lost) and relays the answer (emq.core.flows.recheck).
  Suffixes used here: waiting, waiting:at ("<rank>|<ms of the next look>"), deps:<id>, job:<id>, flow:<id>
]]
--- @include "_checks"
--- @include "_flow"
--- @include "_record"
local ORPHAN_BATCH, ORPHAN_EVERY = 100, 1000

-- One waiting job looked at: its local parents that vanished settle it; its remote ones go to far.
local function orphan_look(id, now, far)
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'group', 'remote')
  if f.err or f[1] ~= 'waiting' then  -- a stale entry (its job gone or elsewhere) or a key with no hash
    flow_unwait(id)
    if f.err then unhashed(key, id, f, now) elseif f[1] then misplaced(key, id, f[1], f[2], now) end
    return
  end
  local remote = f[3] and cjson.decode(f[3]) or {}
  for _, pid in ipairs(redis.call('SMEMBERS', ns .. 'deps:' .. id)) do
    if remote[pid] then
      for _, v in ipairs({id, pid, remote[pid]}) do far[#far + 1] = v end
    elseif rec_count(job_key(pid), ns .. 'flow:' .. pid) == 0 then
      settle(id, pid, 'missing', 'null', '', now)
    end
  end
end

-- Look at the next ORPHAN_BATCH waiting jobs (any: whether a job waits at all), when the last look is ORPHAN_EVERY
-- ms old; returns {child, parent, queue, ...} for their parents in other queues.
local function orphans_check(now, any)
  local far = {}
  if not any then return far end
  local rank, next_ms = string.match(redis.call('GET', ns .. 'waiting:at') or '0|0', '^(%d+)|(%d+)$')
  if now < tonumber(next_ms) then return far end
  rank = tonumber(rank)
  local before = redis.call('ZCARD', ns .. 'waiting')
  local ids = redis.call('ZRANGE', ns .. 'waiting', rank, rank + ORPHAN_BATCH - 1)
  for _, id in ipairs(ids) do orphan_look(id, now, far) end
  -- The jobs that left the set moved those after them down: the next look starts past the ones kept.
  local after = 0
  if #ids == ORPHAN_BATCH then after = rank + #ids - (before - redis.call('ZCARD', ns .. 'waiting')) end
  redis.call('SET', ns .. 'waiting:at', after .. '|' .. (now + ORPHAN_EVERY))
  return far
end
