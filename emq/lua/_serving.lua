--[[
  _serving: whether a group belongs on the ring: its lane has work and nothing keeps it off.
  Suffixes used here: lane:<group>, solo
]]
--- @include "_ring"
-- Whether a group has ready work: a list, or a solo (_solo.lua).
local function lane_exists(group)
  return redis.call('EXISTS', ns .. 'lane:' .. group) == 1 or redis.call('HEXISTS', ns .. 'solo', group) == 1
end

-- Whether a group belongs on the ring: its lane has work, is not paused and is under its cap.
local function lane_serving(group)
  return lane_exists(group) and not off_ring(group)
end
