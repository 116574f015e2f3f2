--[[
  set_cap: set or clear a group's concurrency cap and put its lane on or off the ring to match.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     group name
  ARGV[2] cap       integer >= 1, or "" to clear the cap
  Derived: caps, active, ring, lane:<group>, wake
  Returns: 1
]]
if ARGV[2] == '' then
  redis.call('HDEL', ns .. 'caps', ARGV[1])
else
  redis.call('HSET', ns .. 'caps', ARGV[1], ARGV[2])
end
ring_fix(ARGV[1])
if redis.call('EXISTS', ns .. 'lane:' .. ARGV[1]) == 1 then wake('wake') end
return 1
