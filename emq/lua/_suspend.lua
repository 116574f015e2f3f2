--[[
  _suspend: a durable job's run ended at a suspension (ctx.sleep, ctx.wait_for, ctx.wait_children)
  and gives its slot back without spending an attempt (DESIGN rule 12): scheduled until a sleep's
  wake time; waiting for a signal (until the wait's deadline, which sits in the schedule set) or
  for its children; or ready at once when what it waits for came already. The journal
  (_journal.lua) keeps each sleep's wake time and each wait's deadline from the first run that
  reached it, so a later run of the same code waits for the same instant, not a new one.
  Suffixes used here: job:<id>, deps:<id>, waiting, scheduled, lane:<group>
]]
--- @include "_events"
--- @include "_flow"
--- @include "_journal"
--- @include "_lanes"
--- @include "_record"
--- @include "_schedule"
-- A job that waited (a signal, a wait's deadline) is ready at its lane's head: it had started already.
local function resume(key, id, group, now)
  flow_unwait(id)  -- the waiting set, deps
  rec_unset(key, 'waits')
  rec_set(key, 'state', 'ready', 'due', now)
  lane_push(group, id, true)
  emit('ready', id)
end

-- Wait for signal name (timeout ms, "": none); false when the signal came or the wait's deadline passed.
local function wait_signal(key, id, name, timeout, now)
  if rec_has(key, '@w:' .. name) then return false end
  local deadline = tonumber(rec_get(key, '@t:' .. name) or '')
  if not deadline and timeout ~= '' then
    deadline = now + tonumber(timeout)
    journal_deadline(key, name, deadline)
  end
  if deadline and deadline <= now then return false end
  rec_set(key, 'state', 'waiting', 'waits', name)
  redis.call('ZADD', ns .. 'waiting', now, id)
  if deadline then schedule(id, deadline) end
  emit('waiting', id, 'signal ' .. name)
  return true
end

-- value = "<kind>|<arg>|<name>" (finish.lua's "suspended" item): z, a sleep (arg "+<ms>" from now or
-- "@<epoch ms>"; name its position in the run); w, a wait for signal <name> (arg its timeout ms, "" none);
-- c, a wait for the children spawned (name its position). spared: the job's count of claims given
-- back, this one included. Returns the job's state: scheduled, waiting, or ready.
local function suspend(key, id, group, spared, value, now)
  local kind, arg, name = string.match(value, '^(%a)|([^|]*)|(.*)$')
  rec_set(key, 'spared', spared, 'due', now)
  if kind == 'z' then
    local wake = tonumber(string.sub(arg, 2))
    if string.sub(arg, 1, 1) == '+' then wake = now + wake end
    wake = tonumber(string.match(journal_put(key, '@z:' .. name, wake, now), '|([^|]*)$'))
    if wake > now then
      rec_set(key, 'state', 'scheduled', 'due', wake)
      schedule(id, wake)
      emit('scheduled', id)
      return 'scheduled'
    end
  elseif kind == 'w' then
    if wait_signal(key, id, name, arg, now) then return 'waiting' end
  elseif redis.call('EXISTS', ns .. 'deps:' .. id) == 1 then  -- c: children still running
    rec_set(key, 'state', 'waiting')
    redis.call('ZADD', ns .. 'waiting', now, id)
    emit('waiting', id, 'children')
    return 'waiting'
  end
  rec_set(key, 'state', 'ready')
  lane_push(group, id, true)
  emit('ready', id)
  return 'ready'
end
