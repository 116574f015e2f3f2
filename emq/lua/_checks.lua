--[[
  _checks: what a script reads from a job is checked before its first write; scripts.py prepends
  this file after _prelude.lua (whose bury and active_add it uses).
  Valkey does not roll a failed script back, so a script that errors halfway leaves jobs outside
  every set. Instead, a job whose fields a script cannot use is quarantined: it ends dead with
  reason "corrupt" and the error "corrupt: <what was wrong>", in the same call, and the batch
  goes on. A job is never dropped silently.
  KEYS[1] ns  <prefix>:{<queue>}: (every key is ns .. suffix)
  The functions are assigned to the names _prelude.lua declares (its reclaim uses them).
  Suffixes used here: job:<id>, held, leases, dead, done, cancelled, scheduled, waiting, lane:<group>, stats
  held: HASH id -> group of every lease claimed under a cap, written by bclaim (and set_cap, for the
  leases a new cap finds): exactly the leases a group's active count holds, so whoever ends one
  gives its count back (held_release), even when the job's hash is gone. Uncapped groups keep no
  count: it would decide nothing, and a claim and a finish paid two hash writes a group for it.
]]
local KNOWN = {scheduled = 'scheduled', completed = 'done', dead = 'dead', cancelled = 'cancelled',
  active = 'leases', waiting = 'waiting', ready = true}

-- What makes a claimed job's fields unusable, or nil and the lease in ms: f = fn, lease, attempts,
-- max_attempts (nil: the default), group. Each tonumber of a string costs ~1k instructions (strtod,
-- twice): the claim's hot path parses the lease here once and a left-out max_attempts never.
claim_fault = function(fn, lease, attempts, max_attempts, group)
  if not fn or fn == '' then return 'fn missing' end
  if not lease then return 'lease missing' end
  local ms = tonumber(lease)
  if not ms or ms ~= math.floor(ms) then return 'lease is not a whole number of ms: ' .. string.sub(lease, 1, 40) end
  if ms < 1 then return 'lease under 1 ms' end
  if attempts and not tonumber(attempts) then return 'attempts is not a number' end
  if max_attempts and not tonumber(max_attempts) then return 'max_attempts is not a number' end
  if not group then return 'group missing or not its lane' end
  return nil, ms
end

-- End a job dead as corrupt (the caller has taken it out of its set) and count it.
quarantine = function(key, id, now, what)
  bury(key, id, now, 'corrupt: ' .. what, 'corrupt')
  count(now, 'dead', 1)
  emit('dead', id, 'corrupt')
end

-- Whether a job in state sits where that state says (a lane for ready: O(lane), only on anomalies).
local function placed(id, state, group)
  local where = KNOWN[state]
  if where == true then
    return group ~= nil and group ~= false and (redis.call('LPOS', ns .. 'lane:' .. group, id) ~= false
      or redis.call('HGET', ns .. 'solo', group) == id)
  end
  return redis.call('ZSCORE', ns .. where, id) ~= false
end

-- A lane or the lease set held an id whose job is not in the state that set means. A duplicate
-- of a job that sits where its state says is dropped; anything else is quarantined.
misplaced = function(key, id, state, group, now)
  if KNOWN[state] and placed(id, state, group) then return end
  quarantine(key, id, now, 'state is ' .. string.format('%q', string.sub(state, 1, 40)))
end

-- A leased job whose hash is gone: release the active count its lease held (from held: capped groups).
lease_gone = function(id)
  redis.call('ZREM', ns .. 'leases', id)
  held_release({id})
end

-- When this server started, on its clock, at most 1 s early (INFO's uptime is in whole seconds,
-- rounded down): no lease is granted while a server is down, so the second before it started holds
-- none. Read once per script call, and only when needed.
local started_at
local function server_started(now)
  if not started_at then
    local up = tonumber(string.match(redis.call('INFO', 'server'), 'uptime_in_seconds:(%d+)'))
    started_at = up and now - (up + 1) * 1000 or -math.huge
  end
  return started_at
end

-- A lease granted (or last renewed) at `granted` before the server started, by a worker that
-- may still hold its job through the outage: the expiry it gets instead, its own length after
-- the start (if that is still ahead); else false.
leased_before_start = function(now, granted, lease_until)
  local at, untl = tonumber(granted), tonumber(lease_until)
  if not at or not untl then return false end
  local start = server_started(now)
  if at >= start or start + (untl - at) <= now then return false end
  return start + (untl - at)
end
