--[[
  flow_relay: settle, in the children's queue, parents that settled in another queue (the Pump
  forwards each queue's relay list here; an enqueue relays parents it found settled). Each
  item counts once: a repeated forward, or a child no longer waiting, changes nothing.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of items
  then 6 fields per item:
          child     the waiting job's id, or a batch recorded here
          parent    the parent's id (a batch member's, for a batch)
          state     completed | dead | cancelled | missing (a batch parent: completed | failed)
          result    the parent's result JSON ("null" when none)
          reason    the parent's reason ("" when none)
          batch     "1" when child is a batch recorded here and parent one of its members
  Derived: job:<id>, deps:<id>, flow:<id>, members:<id>, children:<id>, finished:<id>, waiting,
           what _flow.lua's release and give_up touch
  Returns: n
]]
local n = tonumber(ARGV[1])
local now = now_ms()
for i = 0, n - 1 do
  local b = 1 + i * 6
  local child, parent, state = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3]
  if ARGV[b + 6] == '1' then
    batch_settle(child, parent, state, now)
  else
    settle(child, parent, state, ARGV[b + 4], ARGV[b + 5], now)
  end
end
flush_events()
return n
