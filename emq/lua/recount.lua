--[[
  recount: one bounded step of counting a queue's ready jobs from its lanes, for a queue whose
  counters are not exact yet (it predates them); the Pump calls it until it answers done.
  The first step starts the walk (mode "recount", ready 0) and rebuilds the ring's membership set
  from the ring list, dropping any group found twice in it (one pass over the ring, once a queue).
  Each step then reads up to ARGV[1] groups of the lane set (SSCAN) and adds the length of each
  group not seen yet; scripts that change a lane meanwhile count it themselves (_counters.lua), so
  the total is exact when the scan ends, and the mode becomes "exact".
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] count     groups read a step (SSCAN COUNT), 1..1000
  Derived: counters, recount:seen, lanes, lane:<group>, ring, ring:in
  Returns: {done 0|1, ready}   ready = the count so far (exact once done)
]]
--- @include "_chunks"
--- @include "_counters"
--- @include "_solo"
local counters = ns .. 'counters'
local mode = tally_mode()
if mode == 'exact' then return {1, tonumber(redis.call('HGET', counters, 'ready') or '0')} end
if not mode then
  redis.call('DEL', ns .. 'recount:seen')
  redis.call('HSET', counters, 'mode', 'recount', 'ready', 0, 'cursor', '0')
  -- The ring as a queue from before ring:in left it (or as scripts of both versions did meanwhile):
  -- each group once, in its order, and the membership set made from it. Once, O(ring).
  local ring, once, seen = redis.call('LRANGE', ns .. 'ring', 0, -1), {}, {}
  for _, group in ipairs(ring) do
    if not seen[group] then
      seen[group] = true
      once[#once + 1] = group
    end
  end
  redis.call('DEL', ns .. 'ring:in')
  if #once < #ring then redis.call('DEL', ns .. 'ring') end
  each_chunk(once, function(chunk)
    redis.call('SADD', ns .. 'ring:in', unpack(chunk))
    if #once < #ring then redis.call('RPUSH', ns .. 'ring', unpack(chunk)) end
  end)
  return {0, 0}
end
local step = redis.call('SSCAN', ns .. 'lanes', redis.call('HGET', counters, 'cursor') or '0', 'COUNT', tonumber(ARGV[1]))
local added = 0
for _, group in ipairs(step[2]) do
  if redis.call('SADD', ns .. 'recount:seen', group) == 1 then
    added = added + lane_len(group)  -- its list and its solo (_solo.lua)
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
