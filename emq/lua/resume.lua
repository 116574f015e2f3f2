--[[
  resume: let claims take from a paused queue, or from a paused group's lane, again; parked
  workers are woken at once when there is ready work to claim.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     the group to resume, or "" for the whole queue
  Derived: paused, paused:groups, ring, lanes, lane:<group>, caps, active, wake
  Returns: 1 when this call resumed it, 0 when it was not paused
]]
--- @include "_ring_fix"
--- @include "_wake"
local group = ARGV[1]
if group == '' then
  if redis.call('DEL', ns .. 'paused') == 0 then return 0 end
  if redis.call('LLEN', ns .. 'ring') > 0 then wake('wake') end
  return 1
end
if redis.call('SREM', ns .. 'paused:groups', group) == 0 then return 0 end
if ring_fix(group) then wake('wake') end
return 1
