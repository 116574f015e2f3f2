--[[
  repeat_drop: remove a recurrence (row deleted, disabled or moved to another queue).
  Jobs it already minted stay; nothing more is minted for it.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] name
  Derived: repeat, repeat:next, repeat:last
  Returns: 1 it existed, 0 it did not
]]
local name = ARGV[1]
redis.call('ZREM', ns .. 'repeat:next', name)
redis.call('HDEL', ns .. 'repeat:last', name)
return redis.call('HDEL', ns .. 'repeat', name)
