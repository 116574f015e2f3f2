--[[
  repeat_put: upsert one recurrence's definition; a new or rescheduled recurrence is armed.
  Armed = score 0 in repeat:next, so the leading Pump computes its first occurrence after the
  server's now (a client never passes "now"); a change of anything but the schedule keeps
  the next occurrence, so saving a row never skips or repeats one.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] name      the recurrence's unique name
  ARGV[2] def       JSON definition; its "key" field fingerprints the schedule (cron/every, tz)
  Derived: repeat, repeat:next, pumpwake
  Returns: 1 armed (new, or its schedule changed), 0 definition updated in place
]]
--- @include "_wake"
local name, def = ARGV[1], ARGV[2]
local old = redis.call('HGET', ns .. 'repeat', name)
redis.call('HSET', ns .. 'repeat', name, def)
local function key_of(raw)  -- nil for a definition that is not JSON (never written by emq)
  local ok, d = pcall(cjson.decode, raw)
  if ok and type(d) == 'table' then return d.key end
  return nil
end
local kept = old and key_of(old) == key_of(def)
if kept and redis.call('ZSCORE', ns .. 'repeat:next', name) then
  return 0
end
redis.call('ZADD', ns .. 'repeat:next', 0, name)
wake('pumpwake')
return 1
