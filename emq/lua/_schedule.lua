--[[
  _schedule: the schedule set (the visibility fence); its earliest due time wakes the Pump.
  Suffixes used here: scheduled, pumpwake
]]
--- @include "_wake"
-- Put an id in the schedule set; wake the Pump when it became the earliest due time.
local function schedule(id, due)
  redis.call('ZADD', ns .. 'scheduled', due, id)
  local head = redis.call('ZRANGE', ns .. 'scheduled', 0, 0)
  if head[1] == id then wake('pumpwake') end
end
