--[[
  repeat_due: the recurrences whose next occurrence is due on the server clock.
  A name in repeat:next without a definition (a half-finished drop) is removed.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] limit     most recurrences to return
  Derived: repeat, repeat:next
  Returns: {now_ms, name_1, next_ms_1, def_1, ...}   next_ms 0 = armed, no occurrence computed yet
]]
--- @include "_clock"
local now = now_ms()
local out = {now}
local due = redis.call('ZRANGEBYSCORE', ns .. 'repeat:next', '-inf', now, 'WITHSCORES', 'LIMIT', 0,
  tonumber(ARGV[1]))
for i = 1, #due, 2 do
  local def = redis.call('HGET', ns .. 'repeat', due[i])
  if def then
    out[#out + 1] = due[i]
    out[#out + 1] = due[i + 1]
    out[#out + 1] = def
  else
    redis.call('ZREM', ns .. 'repeat:next', due[i])
  end
end
return out
