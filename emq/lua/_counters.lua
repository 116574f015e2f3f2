--[[
  _counters: a queue's ready counter and the ring's membership set, kept by the scripts that move
  jobs, so counts.lua and a cap crossing never walk the lanes or scan the ring (DESIGN rule 8);
  scripts.py loads it after _events.lua and before _prelude.lua, whose lane helpers call it.
  KEYS[1] ns  <prefix>:{<queue>}: (every key is ns .. suffix)
  Suffixes used here: counters, recount:seen, lanes, lane:<group>, solo, ring, ring:in
  counters (hash): ready = ids in all lanes (the other states are their own sets' sizes, read by
  ZCARD in counts.lua), and mode = how far ready can be trusted:
    absent   not kept: the queue predates counters (counts.lua walks the lanes until the Pump's
             recount.lua has run); a queue whose lane set is empty starts "exact" (tally_open)
    recount  recount.lua walks the lane set in steps; a change to a group it has not seen yet makes
             the group seen at once, counted at its length after the change, so each group counts
             exactly once however the walk and the changes interleave
    exact    every change of a lane adds its delta
  ring:in (set): the groups in the ring list, each once. A group joins the ring only when SADD says
  it was not in it, so taking it off needs no scan: bclaim visits the ring's head from a snapshot and
  cuts the groups that leave as it writes the turn back (LTRIM, RPUSH), and a group whose lane a
  cancel emptied stays in the list until bclaim comes round to it and drops it (lazy removal).
]]
local counters_mode = nil  -- the counters' mode, read once per script call

-- solo (hash): group -> its one ready id, for a group a batch mint found without ready work and gave one
-- job (_prelude's lane_batch). bclaim takes a chunk of the ring's solos with one HMGET and one HDEL, where
-- a list of one id cost a key, its LPOP and its delete a group. A group's ready ids are its solo or its
-- list lane:<group>, never both (a second id makes the solo the list's first entry: lane_unsolo), and a
-- group with a solo is in the lane set; lane_len and lane_exists read both places.
local function lane_len(group)
  return redis.call('LLEN', ns .. 'lane:' .. group) + redis.call('HEXISTS', ns .. 'solo', group)
end

local function lane_exists(group)
  return redis.call('EXISTS', ns .. 'lane:' .. group) == 1 or redis.call('HEXISTS', ns .. 'solo', group) == 1
end

-- A group's list just got its first entry, at the head (front) or the tail: a solo the group had goes to
-- the other end (it came first, or the entry jumps the queue). Returns whether there was one.
local function lane_unsolo(group, front)
  local old = redis.call('HGET', ns .. 'solo', group)
  if not old then return false end
  redis.call('HDEL', ns .. 'solo', group)
  redis.call(front and 'RPUSH' or 'LPUSH', ns .. 'lane:' .. group, old)
  return true
end

local function tally_mode()
  if counters_mode == nil then counters_mode = redis.call('HGET', ns .. 'counters', 'mode') or false end
  return counters_mode
end

-- Before a script's first lane change: a queue whose lanes are all empty starts exact counters.
local function tally_open()
  if tally_mode() == false and redis.call('EXISTS', ns .. 'lanes') == 0 then
    redis.call('HSET', ns .. 'counters', 'mode', 'exact', 'ready', 0)
    counters_mode = 'exact'
  end
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

-- Put a group at the ring's tail unless it is in the ring already (it keeps its turn then).
local function ring_join(group)
  if redis.call('SADD', ns .. 'ring:in', group) == 1 then redis.call('RPUSH', ns .. 'ring', group) end
end

-- Take a group off the ring at once, scanning the ring: only for rare, manual changes (pause, a
-- lowered cap), whose callers say so; a cap crossing or a cancel never calls it.
local function ring_drop_now(group)
  if redis.call('SREM', ns .. 'ring:in', group) == 1 then redis.call('LREM', ns .. 'ring', 0, group) end
end
