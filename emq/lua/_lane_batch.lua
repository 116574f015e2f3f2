--[[
  _lane_batch: the ready ids of a mint of many jobs, pushed once per group at its end; a group with
  one id and no ready work gets a solo (_solo.lua).
  Suffixes used here: lane:<group>, lanes, solo
]]
--- @include "_chunks"
--- @include "_lanes"
--- @include "_prio"
--- @include "_ready_batch"
--- @include "_ring"
-- Append ready ids (at most a few thousand) to a group's plain lane in one RPUSH; a lane that was
-- empty joins the ring. The ready counter takes them through ready_batch: call ready_settle after.
local function lane_append(group, ids)
  local len = redis.call('RPUSH', ns .. 'lane:' .. group, unpack(ids))
  ready_batch(group, #ids)
  if len == #ids then lane_joined(group, false) end
end

-- The groups of a batch mint (two or more) that had no ready work and get one id, not in priority mode,
-- take a solo (_solo.lua): one SMISMEMBER, one HSET and one SADD to the lane set a chunk of groups where
-- each would have cost a list key (and bclaim its LPOP) and an SADD. Returns the set of those groups, which
-- lane_batch's flush puts on the ring; a mint of one group keeps its list.
local function solo_mint(groups, ready_ids)
  local made, pairs_, joined = {}, {}, {}
  each_chunk(groups, function(chunk)
    local had = redis.call('SMISMEMBER', ns .. 'lanes', unpack(chunk))
    for i = 1, #chunk do
      local group = chunk[i]
      local ids = ready_ids[group]
      if had[i] == 0 and #ids == 1 and not prio_on(group) then
        made[group] = true
        joined[#joined + 1] = group
        pairs_[#pairs_ + 1] = group
        pairs_[#pairs_ + 1] = ids[1]
      end
    end
  end)
  each_chunk(pairs_, function(chunk) redis.call('HSET', ns .. 'solo', unpack(chunk)) end)
  each_chunk(joined, function(chunk) redis.call('SADD', ns .. 'lanes', unpack(chunk)) end)
  return made
end

-- Ready ids of a mint, pushed once per group at the end (one RPUSH for a whole chunk of one group),
-- groups in order of first appearance, as one lane_push per job would have ordered them. A job for
-- the lane's front, or for a group in priority mode (_prio.lua), first flushes its group's batch.
-- Returns push(group, id, front) for put_job and flush() for the script's end.
local function lane_batch()
  local ready_ids, groups = {}, {}
  local function flush_group(group)
    local ids = ready_ids[group]
    if #ids == 0 then return end
    lane_append(group, ids)
    ready_ids[group] = {}
  end
  local function push(group, id, front)
    if not ready_ids[group] then
      ready_ids[group] = {}
      groups[#groups + 1] = group
    end
    if front or prio_on(group) then
      flush_group(group)
      return lane_push(group, id, front)
    end
    local ids = ready_ids[group]
    ids[#ids + 1] = id
  end
  local function flush()
    local solo = #groups > 1 and solo_mint(groups, ready_ids) or {}
    for _, group in ipairs(groups) do
      if solo[group] then  -- in the lane set already (solo_mint): lane_joined's ring half, in mint order
        ready_batch(group, 1)
        if not off_ring(group) then ring_join(group) end
      else
        flush_group(group)
      end
    end
    ready_settle()
  end
  return push, flush
end
