--[[
  _holds: a group ("" the whole queue) held off the ring until a time: its rate limit's window is full
  (_rates.lua) or a job asked for it; the Pump's tick releases it.
  Suffixes used here: rhold (zset: group | "" -> ms its hold ends), rout (set: held groups off the ring)
]]
--- @include "_ring"
--- @include "_serving"
--- @include "_wake"
local HOLDS = nil  -- whether the queue has a hold (read once a call)
local HOLDAT = {}  -- this call's reads of rhold: group -> ms its hold ends | false (_rates.lua's rate_prefetch)

-- Hold a group ("" the whole queue) until ms at least; wake the Pump when that is before its next tick.
local function rate_hold(group, untl)
  local cur = redis.call('ZSCORE', ns .. 'rhold', group)
  if cur and tonumber(cur) >= untl then return end
  redis.call('ZADD', ns .. 'rhold', untl, group)
  HOLDS, RHOLD, HOLDAT[group] = true, true, untl
  if untl < pump_next() then wake('pumpwake') end  -- _wake.lua
end

-- The Pump's tick: end the holds due by now; a group that left the ring for its hold rejoins it.
local function rate_release(now, limit)
  local due = redis.call('ZRANGEBYSCORE', ns .. 'rhold', '-inf', now, 'LIMIT', 0, limit)
  local woke = false
  for _, group in ipairs(due) do
    redis.call('ZREM', ns .. 'rhold', group)
    HOLDAT[group] = false
    if group == '' then
      woke = true
    elseif redis.call('SREM', ns .. 'rout', group) == 1 and lane_exists(group)
        and not off_ring(group) then
      ring_join(group)  -- _ring.lua: the ring's membership set
      woke = true
    end
  end
  if woke then wake('wake') end
  return #due
end
