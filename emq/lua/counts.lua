--[[
  counts: how many jobs of the queue are in each state, and when the next one falls due.
  O(1) in jobs and groups: ready is the counter the scripts keep (_counters.lua), every other state
  the size of its own set. A queue from before the counters (mode not "exact") is walked, one LLEN a
  group with work, until the Pump's recount.lua has counted it. Reads only.
  KEYS[1] ns        <prefix>:{<queue>}:
  Derived: counters, scheduled, lanes, lane:<group>, leases, done, dead, ring, cancelled, paused, waiting, relay
  Returns: {now_ms, scheduled, ready, active, completed, dead, next_due_ms|-1, groups_on_ring,
            cancelled, paused 0|1, waiting, relay}   waiting = jobs waiting for their parents;
            relay = parents' outcomes still to forward to other queues; groups_on_ring may include
            lanes a cancel emptied until a claim comes round to them
]]
--- @include "_clock"
--- @include "_counters"
--- @include "_solo"
local now = now_ms()
local ready = 0
if tally_mode() == 'exact' then
  ready = math.max(tonumber(redis.call('HGET', ns .. 'counters', 'ready') or '0'), 0)
elseif redis.call('EXISTS', ns .. 'lanes') == 1 then
  for _, group in ipairs(redis.call('SMEMBERS', ns .. 'lanes')) do
    ready = ready + lane_len(group)  -- its list and its solo (_solo.lua)
  end
end
local h = redis.call('ZRANGE', ns .. 'scheduled', 0, 0, 'WITHSCORES')
local next_due = -1
if h[2] then next_due = tonumber(h[2]) end
return {now, redis.call('ZCARD', ns .. 'scheduled'), ready, redis.call('ZCARD', ns .. 'leases'),
  redis.call('ZCARD', ns .. 'done'), redis.call('ZCARD', ns .. 'dead'), next_due,
  redis.call('LLEN', ns .. 'ring'), redis.call('ZCARD', ns .. 'cancelled'), redis.call('EXISTS', ns .. 'paused'),
  redis.call('ZCARD', ns .. 'waiting'), redis.call('LLEN', ns .. 'relay')}
