--[[
  pause: stop claims from the whole queue, or from one group's lane; the jobs stay ready and due
  ones are still promoted. A paused queue answers every claim with nothing (one EXISTS in bclaim);
  a paused group's lane leaves the ring like a capped one (ring_fix's LREM on the ring: pausing is
  rare, and no claim ever scans for paused groups). The state lives here, so it survives restarts.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     the group to pause, or "" for the whole queue
  Derived: paused, paused:groups, ring, lane:<group>, caps, active
  Returns: 1 when this call paused it, 0 when it was paused already
]]
--- @include "_clock"
--- @include "_ring_fix"
local group = ARGV[1]
if group == '' then
  if redis.call('EXISTS', ns .. 'paused') == 1 then return 0 end
  redis.call('SET', ns .. 'paused', now_ms())
  return 1
end
if redis.call('SADD', ns .. 'paused:groups', group) == 0 then return 0 end
ring_fix(group)
return 1
