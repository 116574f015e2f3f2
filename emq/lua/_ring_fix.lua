--[[
  _ring_fix: a manual change (pause, resume, a new cap) puts a group on the ring or takes it off.
  Suffixes used here: ring, ring:in
]]
--- @include "_ring"
--- @include "_serving"
-- Take a group off the ring at once, scanning the ring: only for rare, manual changes (pause, a
-- lowered cap), whose callers say so; a cap crossing or a cancel never calls it.
local function ring_drop_now(group)
  if redis.call('SREM', ns .. 'ring:in', group) == 1 then redis.call('LREM', ns .. 'ring', 0, group) end
end

-- Restore the ring invariant for one group after a manual change (pause, resume, a new cap): on the
-- ring iff lane_serving. Taking it off scans the ring (ring_drop_now), which only these rare changes
-- do. Returns true when the group is on the ring afterwards.
local function ring_fix(group)
  if lane_serving(group) then
    ring_join(group)
    return true
  end
  ring_drop_now(group)
  return false
end
