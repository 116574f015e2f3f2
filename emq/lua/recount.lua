--[[
  recount: one bounded step of counting a queue's ready jobs from its lanes, for a queue whose
  counters are not exact yet (it predates them); the Pump calls it until it answers done.
  The first step starts the walk (mode "recount", ready 0) and fills the ring's membership set
  from the ring list when there is none (a queue from before it: one LRANGE of the ring, once).
  Each step then reads up to ARGV[1] groups of the lane set (SSCAN) and adds the length of each
  group not seen yet; scripts that change a lane meanwhile count it themselves (_counters.lua), so
  the total is exact when the scan ends, and the mode becomes "exact".
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] count     groups read a step (SSCAN COUNT), 1..1000
  Derived: counters, recount:seen, lanes, lane:<group>, ring, ring:in
  Returns: {done 0|1, ready}   ready = the count so far (exact once done)
]]
local counters = ns .. 'counters'
local mode = tally_mode()
if mode == 'exact' then return {1, tonumber(redis.call('HGET', counters, 'ready') or '0')} end
if not mode then
  redis.call('DEL', ns .. 'recount:seen')
  redis.call('HSET', counters, 'mode', 'recount', 'ready', 0, 'cursor', '0')
  if redis.call('EXISTS', ns .. 'ring:in') == 0 then
    local ring = redis.call('LRANGE', ns .. 'ring', 0, -1)
    for i = 1, #ring, 1000 do
      redis.call('SADD', ns .. 'ring:in', unpack(ring, i, math.min(i + 999, #ring)))
    end
  end
  return {0, 0}
end
local step = redis.call('SSCAN', ns .. 'lanes', redis.call('HGET', counters, 'cursor') or '0', 'COUNT', tonumber(ARGV[1]))
local added = 0
for _, group in ipairs(step[2]) do
  if redis.call('SADD', ns .. 'recount:seen', group) == 1 then
    added = added + redis.call('LLEN', ns .. 'lane:' .. group)
  end
end
local ready = redis.call('HINCRBY', counters, 'ready', added)
if step[1] ~= '0' then
  redis.call('HSET', counters, 'cursor', step[1])
  return {0, ready}
end
redis.call('HSET', counters, 'mode', 'exact')
redis.call('HDEL', counters, 'cursor')
redis.call('UNLINK', ns .. 'recount:seen')
return {1, ready}
