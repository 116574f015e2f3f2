--[[
  counts: how many jobs of the queue are in each state, and when the next one falls due.
  Ready is summed over the lanes in the lane set (one LLEN a group with work).
  KEYS[1] ns        <prefix>:{<queue>}:
  Derived: scheduled, lanes, lane:<group>, leases, done, dead, ring, cancelled, paused, waiting, relay
  Returns: {now_ms, scheduled, ready, active, completed, dead, next_due_ms|-1, groups_on_ring,
            cancelled, paused 0|1, waiting, relay}   waiting = jobs waiting for their parents;
            relay = parents' outcomes still to forward to other queues
]]
local now = now_ms()
local ready = 0
for _, group in ipairs(redis.call('SMEMBERS', ns .. 'lanes')) do
  ready = ready + redis.call('LLEN', ns .. 'lane:' .. group)
end
local h = redis.call('ZRANGE', ns .. 'scheduled', 0, 0, 'WITHSCORES')
local next_due = -1
if h[2] then next_due = tonumber(h[2]) end
return {now, redis.call('ZCARD', ns .. 'scheduled'), ready, redis.call('ZCARD', ns .. 'leases'),
  redis.call('ZCARD', ns .. 'done'), redis.call('ZCARD', ns .. 'dead'), next_due,
  redis.call('LLEN', ns .. 'ring'), redis.call('ZCARD', ns .. 'cancelled'), redis.call('EXISTS', ns .. 'paused'),
  redis.call('ZCARD', ns .. 'waiting'), redis.call('LLEN', ns .. 'relay')}
