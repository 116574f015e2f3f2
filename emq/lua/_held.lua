--[[
  _held: leases that end, and the active counts of the capped groups that held them.
  held: HASH id -> group of every lease claimed under a cap, written by bclaim (and set_cap, for the
  leases a new cap finds): exactly the leases a group's active count holds, so whoever ends one
  gives its count back (held_release), even when the job's hash is gone. Uncapped groups keep no
  count: it would decide nothing, and a claim and a finish paid two hash writes a group for it.
  Suffixes used here: leases, held, active, caps
]]
--- @include "_chunks"
--- @include "_ring"
--- @include "_serving"
--- @include "_wake"
-- Add delta to a group's active count; a capped group that drops below its cap rejoins the ring,
-- and parked workers are woken for its waiting work. Only a lease claimed under a cap is counted
-- (it is in held, id -> group): an uncapped group's count would decide nothing, and keeping it cost
-- a claim and a finish two hash writes a group (set_cap counts the leases a new cap finds).
-- capped = false says the queue has no caps at all (active_release reads that once a batch).
local function active_add(group, delta, capped)
  local n = redis.call('HINCRBY', ns .. 'active', group, delta)
  if n <= 0 then redis.call('HDEL', ns .. 'active', group) end
  if delta < 0 and capped ~= false then
    local cap = redis.call('HGET', ns .. 'caps', group)
    -- At its cap the group was off the ring (bclaim took it off), so rejoining needs no scan.
    if cap and n - delta >= tonumber(cap) and n < tonumber(cap) and lane_serving(group) then
      ring_join(group)
      wake('wake')
    end
  end
  return n
end

-- Settle per-group active decrements gathered over a batch: {group = count}.
local function active_release(counts)
  local capped = redis.call('EXISTS', ns .. 'caps') == 1
  for group, k in pairs(counts) do active_add(group, -k, capped) end
end

-- The leases of ids ended (finished, released, reclaimed, cancelled, gone): those counted against
-- their group's cap leave held and give their count back; one HMGET and one HDEL a chunk of ids.
local function held_release(ids)
  if #ids == 0 or redis.call('EXISTS', ns .. 'held') == 0 then return end
  local counts = {}
  each_chunk(ids, function(chunk)
    for _, group in ipairs(redis.call('HMGET', ns .. 'held', unpack(chunk))) do
      if group then counts[group] = (counts[group] or 0) + 1 end
    end
    redis.call('HDEL', ns .. 'held', unpack(chunk))
  end)
  active_release(counts)
end

-- The leases of ids ended (finished, released, cancelled, or the job's hash is gone): out of the lease
-- set, and the active count each held under a cap given back (from held: capped groups).
local function leases_end(ids)
  if #ids == 0 then return end
  redis.call('ZREM', ns .. 'leases', unpack(ids))
  held_release(ids)
end
