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
