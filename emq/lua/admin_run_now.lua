--[[
  admin_run_now: make scheduled jobs ready now (the dashboard's "run now"); attempts stay counted.
  A job in any other state is left as it is and its state is answered instead of "ok"; a key that
  holds no hash is quarantined (_checks.lua: dead as corrupt, answered "dead").
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, scheduled, dead, stats, lane:<group>, ring, lanes, caps, active, wake
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it is not scheduled
]]
--- @include "_checks"
--- @include "_clock"
--- @include "_events"
--- @include "_lanes"
--- @include "_record"
--- @include "_wake"
local now = now_ms()
local out, ready = {}, 0
for i, id in ipairs(ARGV) do
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'group')
  if f.err then  -- the key holds no hash: dead as corrupt (_checks.lua)
    redis.call('ZREM', ns .. 'scheduled', id)
    unhashed(key, id, f, now)
    out[i] = 'dead'
  elseif not f[1] then
    out[i] = 'missing'
  elseif f[1] ~= 'scheduled' then
    out[i] = f[1]
  else
    redis.call('ZREM', ns .. 'scheduled', id)
    rec_set(key, 'state', 'ready', 'due', now)
    lane_push(f[2], id, false)
    ready = ready + 1
    emit('ready', id)
    out[i] = 'ok'
  end
end
if ready > 0 then wake('wake') end
flush_events()
return out
