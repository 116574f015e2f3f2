--[[
  _prio_take: a ready job leaves a group in priority mode (_prio.lua): claimed through a marker,
  cancelled, or the last one gone.
  Suffixes used here: prio, plane:<group>, lane:<group>
]]
--- @include "_prio"
-- The id a popped list entry stands for: itself, or the first of the group's zset for a marker (nil: none).
local function prio_pop(group, id)
  if id ~= PMARK then return id end
  local top = redis.call('ZPOPMIN', ns .. 'plane:' .. group)
  return top[1]
end

-- The markers among ids[1..n] (a lane's pop) replaced in order by the ids they stand for, the zset's first members:
-- one ZPOPMIN for them all, not one a job, so a claim reads their records ahead with the rest (false: none left).
local function prio_pop_all(group, ids, n)
  local marks = 0
  for i = 1, n do
    if ids[i] == PMARK then marks = marks + 1 end
  end
  if marks == 0 then return end
  local top, j = redis.call('ZPOPMIN', ns .. 'plane:' .. group, marks), 1
  for i = 1, n do
    if ids[i] == PMARK then ids[i], j = top[j] or false, j + 2 end  -- member, score, member, ...
  end
end

-- Take a ready job out of its group's list (cancel): from the zset and one marker, or the id itself
-- from the list. Returns how many list entries left (0 or 1), for the ready counter.
local function prio_unlane(group, id)
  local lane = ns .. 'lane:' .. group
  if prio_on(group) and redis.call('ZREM', ns .. 'plane:' .. group, id) == 1 then
    return redis.call('LREM', lane, 1, PMARK)
  end
  return redis.call('LREM', lane, 1, id)
end

-- A group whose lane emptied leaves priority mode: its next jobs take the plain list again.
local function prio_drained(group)
  if prio_on(group) and redis.call('EXISTS', ns .. 'plane:' .. group) == 0 then
    redis.call('SREM', ns .. 'prio', group)
    PRIO[group] = false
  end
end
