--[[
  resign: a stopping Pump gives up its lead at once, so another Pump takes over without
  waiting for the lead's TTL; compare-and-delete, so it never deletes a successor's lead.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] pump      id of the resigning Pump
  Derived: leader
  Returns: 1 the lead was this Pump's and is gone, 0 it was not (nothing changed)
]]
if redis.call('GET', ns .. 'leader') ~= ARGV[1] then return 0 end
redis.call('DEL', ns .. 'leader')
return 1
