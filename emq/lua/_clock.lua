--[[
  _clock: the server's clock (DESIGN rule 1: one clock).
]]
-- Read the server clock once per script (Redis 7.0 does not freeze it for a script).
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A whole number (ms, a token) as the text a command's argument or a packed record carries, made once a call
-- per value: Lua makes a number's text with sprintf and a fresh string, dear beside a claim's other work a job
-- (docs/reference/performance.md), and a batch repeats the same few (now, a lease's expiry, a token). %d, never
-- an exponent.
-- Reset each call (functions.RESET).
local NUM_TEXT = {}
local function num_text(n)
  local t = NUM_TEXT[n]
  if not t then
    t = string.format('%d', n)
    NUM_TEXT[n] = t
  end
  return t
end
