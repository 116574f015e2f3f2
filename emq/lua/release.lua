--[[
  release: give a batch of claimed jobs back before they finish; each attempt stays counted.
  A released job goes to the head of its lane (ready now) or into the schedule set (after a delay).
  KEYS[1] ns        <prefix>:{<queue>}:
  then 3 fields per item: id, token, delay_ms (0 = ready now)
  A job whose hash is gone releases its group's count; one without a group, or whose key holds no
  hash (answered "missing"), ends dead as corrupt.
  Derived: job:<id>, leases, held, dead, lane:<group>, ring, lanes, caps, active, scheduled, wake, pumpwake
  Returns: {status_1, ...}   status = "ok" | "stale" | "missing"
]]
--- @include "_checks"
--- @include "_clock"
--- @include "_events"
--- @include "_held"
--- @include "_lanes"
--- @include "_record"
--- @include "_schedule"
--- @include "_wake"
local now = now_ms()
local out, freed, ready = {}, {}, 0
for i = 1, #ARGV, 3 do
  local id, token, delay = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'attempts', 'group')
  if f.err then  -- the key holds no hash: the job ends dead as corrupt (_checks.lua)
    freed[#freed + 1] = id
    unhashed(key, id, f, now)
    out[#out + 1] = 'missing'
  elseif not f[1] then
    leases_end({id})  -- its hash is gone
    out[#out + 1] = 'missing'
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = 'stale'
  else
    freed[#freed + 1] = id
    if not f[3] then
      quarantine(key, id, now, 'group missing')
    elseif delay <= 0 then
      rec_set(key, 'state', 'ready', 'due', now)
      lane_push(f[3], id, true)
      ready = ready + 1
      emit('ready', id)
    else
      rec_set(key, 'state', 'scheduled', 'due', now + delay)
      schedule(id, now + delay)
      emit('scheduled', id)
    end
    out[#out + 1] = 'ok'
  end
end
leases_end(freed)  -- _held.lua
if ready > 0 then wake('wake') end
flush_events()
return out
