--[[
  _counters: a queue's ready counter, kept by the scripts that move jobs, so counts.lua and a cap
  crossing never walk the lanes (DESIGN rule 8).
  Suffixes used here: counters, recount:seen, lanes
  counters (hash): ready = ids in all lanes (the other states are their own sets' sizes, read by
  ZCARD in counts.lua), and mode = how far ready can be trusted:
    absent   not kept: the queue predates counters (counts.lua walks the lanes until the Pump's
             recount.lua has run); a queue whose lane set is empty starts "exact" (_mint.lua's tally_open)
    recount  recount.lua walks the lane set in steps; a change to a group it has not seen yet makes
             the group seen at once, counted at its length after the change, so each group counts
             exactly once however the walk and the changes interleave
    exact    every change of a lane adds its delta
]]
--- @include "_solo"
local counters_mode = nil  -- the counters' mode, read once per script call

local function tally_mode()
  if counters_mode == nil then counters_mode = redis.call('HGET', ns .. 'counters', 'mode') or false end
  return counters_mode
end

-- Count k ids that entered (k > 0) or left (k < 0) a group's lane; called after the change.
local function ready_add(group, k)
  local mode = tally_mode()
  if mode == 'recount' and redis.call('SADD', ns .. 'recount:seen', group) == 1 then
    k = lane_len(group)
  elseif not mode then
    return
  end
  if k ~= 0 then redis.call('HINCRBY', ns .. 'counters', 'ready', k) end
end
