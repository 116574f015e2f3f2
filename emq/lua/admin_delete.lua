--[[
  admin_delete: delete jobs that wait or have finished (scheduled, completed, dead or cancelled).
  Ready and active jobs are refused: a ready id sits inside a lane list and an active one is
  held by a worker; cancel them instead (cancel.lua). Their state is answered instead of "ok".
  A deleted scheduled job that others wait for ends for them as cancelled (_flow.lua).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, scheduled, done, dead, cancelled, reclaims, and what a flow's end touches (_flow.lua)
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it cannot be deleted
]]
local deletable = {scheduled = 'scheduled', completed = 'done', dead = 'dead', cancelled = 'cancelled'}
local out, now = {}, nil
for i, id in ipairs(ARGV) do
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'notify')
  local state = f[1]
  if not state then
    out[i] = 'missing'
  elseif not deletable[state] then
    out[i] = state
  else
    if state == 'scheduled' and f[2] then
      now = now or now_ms()
      flow_finished(id, 'cancelled', now)
    end
    redis.call('ZREM', ns .. deletable[state], id)
    redis.call('ZREM', ns .. 'reclaims', id)
    redis.call('DEL', key)
    out[i] = 'ok'
  end
end
flush_events()
return out
