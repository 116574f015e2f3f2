--[[
  admin_retry: give dead jobs a fresh budget of attempts and make them ready now.
  The attempt counter is the fencing token, so it is never reset: the budget is raised instead
  (max_attempts = attempts + the job's original max_attempts, kept in "budget"), and the stall
  count starts again. The error history stays on the job.
  A job in any other state is left as it is and its state is answered instead of "ok".
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, dead, lane:<group>, ring, lanes, caps, active, wake, stats
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it is not dead
]]
local now = now_ms()
local out, ready = {}, 0
for i, id in ipairs(ARGV) do
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'group', 'attempts', 'max_attempts', 'budget')
  if not f[1] then
    out[i] = 'missing'
  elseif f[1] ~= 'dead' then
    out[i] = f[1]
  else
    local budget = tonumber(f[5] or f[4] or DEFAULT.max_attempts)
    redis.call('HSET', key, 'state', 'ready', 'due', now, 'stalled', 0, 'budget', budget,
      'max_attempts', tonumber(f[3] or DEFAULT.attempts) + budget, 'revived_at', now)
    redis.call('HDEL', key, 'finished', 'reason')
    redis.call('ZREM', ns .. 'dead', id)
    lane_push(f[2], id, false)
    ready = ready + 1
    emit('ready', id)
    out[i] = 'ok'
  end
end
if ready > 0 then
  redis.call('HINCRBY', ns .. 'stats', 'revived', ready)
  wake('wake')
end
flush_events()
return out
