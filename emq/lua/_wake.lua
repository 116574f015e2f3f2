--[[
  _wake: the lists parked clients block on, the workers' (wake) and the Pump's (pumpwake).
  Suffixes used here: wake, pumpwake, pumplast
]]
-- Leave at most one token in a wake list: one parked waiter is enough to start a chain.
-- WAKE_TOKEN: whether the workers' list ('wake') holds a token, once this call knows it, else nil: an
-- LLEN asks. A claim's flags and a mint's priority check learn it without one: their EXISTS of k keys
-- names the wake list k + 1 times after them, so its share of the count (k + 1 when a token waits) stands
-- apart from theirs (decoded inline, not by a helper: a Lua call each shows in a mint's server time).
-- Only clients pop a wake list (a BLPOP runs between script calls), so what a call learnt holds to its end.
-- tests/test_wake_flags.py pins both counts and decodes every flag with a token waiting and without.
local WAKE_TOKEN = nil
local function wake(suffix)
  local known = nil
  if suffix == 'wake' then known, WAKE_TOKEN = WAKE_TOKEN, true end
  if known == nil then known = redis.call('LLEN', ns .. suffix) > 0 end
  if not known then redis.call('RPUSH', ns .. suffix, '1') end
end

-- The leading Pump's last tick as its tick writes it (tick.lua), "<pump>|<ms of the tick>|<ms it planned the next>":
-- the pump, and the two times as numbers; nil for none. Read here alone: the tick to see a stall, pump_next below.
local function pump_plan(last)
  local who, at, planned = string.match(last or '', '^(.*)|(%d+)|(%d+)$')
  if who then return who, tonumber(at), tonumber(planned) end
end

-- Server ms of the leading Pump's next planned tick; 0 when none is planned. A duty due before it (a lease, a
-- hold) wakes the Pump sooner.
local function pump_next()
  local _, _, planned = pump_plan(redis.call('GET', ns .. 'pumplast'))
  return planned or 0
end
