--[[
  _checks: what a script reads from a job is checked before its first write.
  Valkey does not roll a failed script back, so a script that errors halfway leaves jobs outside
  every set. Instead, a job whose fields a script cannot use is quarantined: it ends dead with
  reason "corrupt" and the error "corrupt: <what was wrong>", in the same call, and the batch
  goes on. A job is never dropped silently.
  A job's key that holds no hash at all (a string, a list: written by something other than emq) would
  make every command on it fail with WRONGTYPE. The first read of a job is a redis.pcall: a hash
  pays nothing more, and only a reply that is an error costs a TYPE (unhashed below).
  Suffixes used here: job:<id>, dead, done, cancelled, scheduled, waiting, leases, lane:<group>, solo, stats
]]
--- @include "_bury"
--- @include "_events"
--- @include "_quota_end"
--- @include "_record"
--- @include "_stats"
local KNOWN = {scheduled = 'scheduled', completed = 'done', dead = 'dead', cancelled = 'cancelled',
  active = 'leases', waiting = 'waiting', ready = true}

-- End a job dead as corrupt (the caller has taken it out of its set) and count it; a quota that counts
-- it gets the count back (its other ends do so through flow_finished, which a quarantine skips).
local function quarantine(key, id, now, what)
  local mark = rec_get(key, 'quota')
  if mark then quota_end(key, mark) end
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
local function misplaced(key, id, state, group, now)
  if KNOWN[state] and placed(id, state, group) then return end
  quarantine(key, id, now, 'state is ' .. string.format('%q', string.sub(state, 1, 40)))
end

-- A job's first read answered an error (redis.pcall's reply, a table with err). If the key holds no
-- hash, it becomes the job's dead-letter record, "corrupt: the job's key held a <type>, not a hash"
-- (a string's first 40 bytes quoted, unprintable ones as "?"), and the caller goes on with the rest
-- of its batch (it has taken the id out of the set it came from). Any other error is raised as it came.
local function unhashed(key, id, reply, now)
  local what = rec_foreign(key)
  if not what then error(reply) end
  rec_delete({key})
  quarantine(key, id, now, "the job's key held a " .. what .. ', not a hash')
end
