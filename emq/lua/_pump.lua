--[[
  _pump: the Pump's duties in a queue: promote due jobs into their lanes, reclaim expired leases.
  Suffixes used here: scheduled, leases, reclaims, job:<id>, and a stall's statistics (_jobstats.lua)
  A job's "graced" field: the lease_until a server stall forgave once (stalled_through).
]]
--- @include "_bury"
--- @include "_checks"
--- @include "_defaults"
--- @include "_errors"
--- @include "_events"
--- @include "_flow"
--- @include "_held"
--- @include "_jobstats"
--- @include "_lanes"
--- @include "_packed"
--- @include "_pending"
--- @include "_record"
--- @include "_stats"
--- @include "_suspend"
--- @include "_unknown"
--- @include "_wake"
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
local function leased_before_start(now, granted, lease_until)
  local at, untl = tonumber(granted), tonumber(lease_until)
  if not at or not untl then return false end
  local start = server_started(now)
  if at >= start or start + (untl - at) <= now then return false end
  return start + (untl - at)
end

-- A lease that ran out while the server was not serving (stall_from: from when the tick forgives
-- expiries, tick.lua; nil: no stall seen), granted (or renewed) at granted: the expiry it gets instead,
-- its own length from now. Once a grant: graced holds the lease_until it was forgiven for, so a lease
-- nobody renewed since is reclaimed at its next expiry whatever the clock does. Else false.
local function stalled_through(now, stall_from, granted, lease_until, graced)
  if not stall_from or lease_until == graced then return false end
  local at, untl = tonumber(granted), tonumber(lease_until)
  if not at or not untl or untl <= stall_from then return false end
  return now + (untl - at)
end

-- Promote up to limit due ids from the schedule set into their lanes (a job waiting for a signal whose
-- deadline came included); returns how many moved.
local function promote_due(now, limit)
  local ids = redis.call('ZRANGEBYSCORE', ns .. 'scheduled', '-inf', now, 'LIMIT', 0, limit)
  if #ids == 0 then return 0 end
  rec_prefetch(ids, #ids)  -- packed records: read in one MGET, written in one MSET (rec_flush)
  for _, id in ipairs(ids) do
    local key = job_key(id)
    local record, group, f
    local s = rec_fetched(key)
    if s then record, group = rec_ready(s) end  -- a plain packed job: its head alone (_packed.lua)
    if not record then f = rec_try_fields(key, 'state', 'group', 'priority') end
    if record then
      rec_put(key, record)
      lane_push(group, id, false)
      emit('ready', id)
    elseif f.err then
      unhashed(key, id, f, now)  -- the key holds no hash: dead as corrupt (_checks.lua)
    elseif f[1] == 'scheduled' and f[2] then
      rec_set(key, 'state', 'ready')
      lane_push(f[2], id, (tonumber(f[3] or '0') or 0) > 0)
      emit('ready', id)
    elseif f[1] == 'scheduled' then
      quarantine(key, id, now, 'group missing')
    elseif f[1] == 'waiting' and f[2] and rec_get(key, 'waits') then
      resume(key, id, f[2], now)  -- a wait for a signal timed out (_suspend.lua): its wait_for returns None
    elseif f[1] then
      misplaced(key, id, f[1], f[2], now)
    end
  end
  rec_flush()
  redis.call('ZREM', ns .. 'scheduled', unpack(ids))
  wake('wake')
  return #ids
end

-- Reclaim up to limit leases expired at now: back to the head of the lane, or dead as stalled.
-- A lease granted before the server (re)started is not reclaimed: it gets one lease period from
-- the start, so workers that held jobs through the outage renew or finish them first. So is one
-- that ran out after stall_from, while the server stood still (tick.lua; nil from the sweep): it
-- gets one lease period from now, once (stalled_through). Returns the reclaimed ids and how many
-- leases a stall kept. A job whose
-- hash is gone releases its group's count; a job not active under a lease, or whose key holds no
-- hash, is quarantined (_checks).
-- Returns the reclaimed ids.
local function reclaim_expired(now, limit, stall_from)
  local ids = redis.call('ZRANGEBYSCORE', ns .. 'leases', '-inf', now, 'LIMIT', 0, limit)
  if #ids == 0 then return ids, 0 end
  rec_prefetch(ids, #ids)  -- packed records: read in one MGET, written in one MSET (rec_flush)
  local ready, dead, out, gone, kept, graced, stalls = 0, 0, {}, {}, {}, 0, {}
  for _, id in ipairs(ids) do
    local key = job_key(id)
    local f = rec_try_fields(key, 'state', 'group', 'stalled', 'max_stalled', 'worker', 'attempts', 'notify',
      'claimed', 'renewed', 'lease_until', 'graced', 'unknown', 'fn', 'v')
    local again = f[1] == 'active' and leased_before_start(now, f[9] or f[8], f[10])
    if f[1] == 'active' and not again then
      again = stalled_through(now, stall_from, f[9] or f[8], f[10], f[11])
      if again then
        rec_set(key, 'graced', f[10])
        graced = graced + 1
      end
    end
    if not again then gone[#gone + 1] = id end
    if f.err then
      unhashed(key, id, f, now)  -- the key holds no hash: dead as corrupt (_checks.lua)
    elseif not f[1] then
      leases_end({id})  -- its hash is gone
    elseif again then
      kept[#kept + 1] = again
      kept[#kept + 1] = id
    elseif f[1] ~= 'active' or not f[2] then
      if f[1] ~= 'active' then misplaced(key, id, f[1], f[2], now) else quarantine(key, id, now, 'group missing') end
    else
      out[#out + 1] = id
      local stalled = (tonumber(f[3] or '0') or 0) + 1
      local line = 'stalled: lease expired (worker ' .. (f[5] or '?') .. ')'
      rec_set(key, 'stalled', stalled, 'reclaimed_at', now, 'reclaimed_from', f[5] or '')
      redis.call('ZADD', ns .. 'reclaims', now, id)
      local d = defaults_of(f[14])
      note_error(key, tonumber(f[6] or d.attempts) or 0, now, line)
      local name = f[13] or '?'
      local tally = stalls[name] or {0, 0}  -- by name for the statistics (_jobstats.lua)
      stalls[name] = tally
      if stalled > (tonumber(f[4] or d.max_stalled) or 1) then
        tally[2] = tally[2] + 1
        bury(key, id, now, line, 'stalled')
        if f[12] then unknown_mark(key, f[13], now, false) end
        dead = dead + 1
        emit('stalled', id, 'dead')
        if f[7] then flow_finished(id, 'dead', now, f[7]) end
      else
        tally[1] = tally[1] + 1
        rec_set(key, 'state', 'ready')
        lane_push(f[2], id, true)
        ready = ready + 1
        emit('stalled', id, 'ready')
      end
    end
  end
  rec_flush()
  stat_stalls(stalls, now)
  if #kept > 0 then redis.call('ZADD', ns .. 'leases', 'XX', unpack(kept)) end
  if #gone == 0 then return out, graced end
  redis.call('ZREM', ns .. 'leases', unpack(gone))
  held_release(gone)
  redis.call('ZREMRANGEBYRANK', ns .. 'reclaims', 0, -1001)
  count(now, 'reclaimed', ready + dead)
  count(now, 'dead', dead)
  if ready > 0 then wake('wake') end
  return out, graced
end
