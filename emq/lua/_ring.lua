--[[
  _ring: the ring of groups with ready work, and what keeps a group off it: a paused lane, its cap
  reached, a rate-limit hold.
  ring:in (set): the groups in the ring list, each once. A group joins the ring only when SADD says
  it was not in it, so taking it off needs no scan: bclaim visits the ring's head from a snapshot and
  cuts the groups that leave as it writes the turn back (LTRIM, RPUSH), and a group whose lane a
  cancel emptied stays in the list until bclaim comes round to it and drops it (lazy removal).
  Suffixes used here: ring, ring:in, caps, active, rhold, rout, paused:groups
]]
-- Put a group at the ring's tail unless it is in the ring already (it keeps its turn then).
local function ring_join(group)
  if redis.call('SADD', ns .. 'ring:in', group) == 1 then redis.call('RPUSH', ns .. 'ring', group) end
end

-- A group with a cap that its active jobs have reached must stay off the ring.
local function at_cap(group)
  local cap = redis.call('HGET', ns .. 'caps', group)
  if not cap then return false end
  return tonumber(redis.call('HGET', ns .. 'active', group) or '0') >= tonumber(cap)
end

-- A group held by its rate limit (_holds.lua) waits in rout, off the ring, until the Pump frees it.
-- RHOLD: whether the queue has any hold, read once a call (rate_hold sets it when it adds one).
local RHOLD = nil
local function rate_held(group)
  if RHOLD == nil then RHOLD = redis.call('EXISTS', ns .. 'rhold') == 1 end
  if not RHOLD or not redis.call('ZSCORE', ns .. 'rhold', group) then return false end
  redis.call('SADD', ns .. 'rout', group)
  return true
end

-- A group stays off the ring while its lane is paused, it is at its cap, or its rate limit holds it.
local function off_ring(group)
  return redis.call('SISMEMBER', ns .. 'paused:groups', group) == 1 or at_cap(group) or rate_held(group)
end
