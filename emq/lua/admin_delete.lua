--[[
  admin_delete: delete jobs that wait or have finished (scheduled, completed or dead).
  Ready and active jobs are refused: a ready id sits inside a lane list and an active one is
  held by a worker; run or release them first. Their state is answered instead of "ok".
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, scheduled, done, dead, reclaims
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it cannot be deleted
]]
local deletable = {scheduled = 'scheduled', completed = 'done', dead = 'dead'}
local out = {}
for i, id in ipairs(ARGV) do
  local key = ns .. 'job:' .. id
  local state = redis.call('HGET', key, 'state')
  if not state then
    out[i] = 'missing'
  elseif not deletable[state] then
    out[i] = state
  else
    redis.call('ZREM', ns .. deletable[state], id)
    redis.call('ZREM', ns .. 'reclaims', id)
    redis.call('DEL', key)
    out[i] = 'ok'
  end
end
return out
