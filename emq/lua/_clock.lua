--[[
  _clock: the server's clock (DESIGN rule 1: one clock).
]]
-- Read the server clock once per script (Redis 7.0 does not freeze it for a script).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
