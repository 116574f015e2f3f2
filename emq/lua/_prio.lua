--[[
  _prio: priorities inside a group's lane (issue 14). The default path stays a plain list: a group
  enters "priority mode" only once a job with a priority other than 0 becomes ready in it.
  In priority mode each ready job of the group is a member of plane:<group>, scored by
  (100 - priority) * 1e13 + sequence (higher priority first, FIFO among equals: O(log n)), and
  a marker PMARK stands for it in lane:<group>, so the list keeps every property the ring and
  the counts rely on (its length is the group's ready count; it exists iff there is ready work).
  A claim that pops a marker takes the zset's first member instead (_prio_take.lua). Markers of
  positive jobs go to the head of the list, others to its tail: plain ids still in the list from
  before the group entered priority mode are older priority-0 jobs, served in their place.
  Suffixes used here: prio (set: groups in priority mode), plane:<group> (zset), pseq (counter)
]]
--- @include "_record"
local PMARK = '\0p'
local PRIO = {}  -- this call's reads: group -> in priority mode; [''] = whether any group is

-- Whether any group of the queue is in priority mode (one EXISTS a call).
local function prio_any()
  local any = PRIO['']
  if any == nil then
    any = redis.call('EXISTS', ns .. 'prio') == 1
    PRIO[''] = any
  end
  return any
end

-- Whether a group's ready jobs go through its priority zset (prio_any, then a SISMEMBER a group).
local function prio_on(group)
  if not prio_any() then return false end
  local on = PRIO[group]
  if on == nil then
    on = redis.call('SISMEMBER', ns .. 'prio', group) == 1
    PRIO[group] = on
  end
  return on
end

-- Put a ready job of a group in priority mode into its zset and a marker in its list; returns the list's
-- length and whether the marker went to its head.
local function prio_push(lane, group, id)
  local p = tonumber(rec_get(job_key(id), 'priority') or '0')
  local seq = redis.call('INCR', ns .. 'pseq')
  redis.call('ZADD', ns .. 'plane:' .. group, (100 - p) * 1e13 + seq, id)
  if p > 0 then return redis.call('LPUSH', lane, PMARK), true end
  return redis.call('RPUSH', lane, PMARK), false
end
