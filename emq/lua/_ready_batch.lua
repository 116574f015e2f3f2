--[[
  _ready_batch: the ready counter (_counters.lua) of a script that changes many lanes, settled once.
  Suffixes used here: counters
]]
--- @include "_counters"
-- A script that changes many lanes (bclaim, mint) adds their deltas with ready_batch and calls
-- ready_settle once: exact counters then take one HINCRBY a call, not one a group.
local ready_pending = 0
local function ready_batch(group, k)
  if tally_mode() == 'exact' then ready_pending = ready_pending + k else ready_add(group, k) end
end
local function ready_settle()
  if ready_pending ~= 0 then redis.call('HINCRBY', ns .. 'counters', 'ready', ready_pending) end
  ready_pending = 0
end
