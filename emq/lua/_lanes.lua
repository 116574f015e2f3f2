--[[
  _lanes: a job becomes ready in its group's lane; a lane that was empty joins the lane set, and the
  ring unless something keeps it off.
  Suffixes used here: lane:<group>, lanes, prio, wake
]]
--- @include "_counters"
--- @include "_prio"
--- @include "_ring"
--- @include "_solo"
--- @include "_wake"
-- A lane whose list was empty got work at its head (front) or tail: it joins the lane set, and the ring
-- unless paused or at its cap. A group in the lane set already had its solo (_solo.lua), which joins
-- the list; its place on the ring or off it stands.
local function lane_joined(group, front)
  if redis.call('SADD', ns .. 'lanes', group) == 0 and lane_unsolo(group, front) then return end
  if not off_ring(group) then ring_join(group) end
end

-- Make an id ready in its group's lane; a lane that was empty joins the ring and the lane set.
-- Whether the queue has groups in priority mode (_prio.lua's PRIO['']) is read with the wake list's token
-- (WAKE_TOKEN: the list named twice), where prio_on and the wake after a push would spend an EXISTS and an LLEN.
local function lane_push(group, id, front)
  local lane = ns .. 'lane:' .. group
  local n
  if PRIO[''] == nil and WAKE_TOKEN == nil then
    local wake_list = ns .. 'wake'
    n = redis.call('EXISTS', ns .. 'prio', wake_list, wake_list)
    PRIO[''], WAKE_TOKEN = n % 2 == 1, n > 1
  end
  if prio_on(group) then n, front = prio_push(lane, group, id)  -- a group in priority mode (_prio.lua)
  elseif front then n = redis.call('LPUSH', lane, id) else n = redis.call('RPUSH', lane, id) end
  ready_add(group, 1)
  if n == 1 then lane_joined(group, front) end
end
