--[[
  flow_relay: settle, in the children's queue, parents that settled in another queue (the Pump
  forwards each queue's relay list here; an enqueue relays parents it found settled). Each
  item counts once: a repeated forward, or a child no longer waiting, changes nothing.
  An item of state "revive" reopens instead: a parent retried after it failed (_revive.lua).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of items
  then 7 fields per item:
          child     the waiting job's id, or a batch recorded here
          parent    the parent's id (a batch member's, for a batch)
          state     completed | dead | cancelled | missing (a batch parent: completed | failed) |
                    revive (the parent was retried: a child it killed waits for it again; a batch no
                    longer counts the member's end)
          result    the parent's result JSON ("null" when none)
          reason    the parent's reason ("" when none); for revive of a batch member, the state it
                    had ended in (dead | cancelled)
          batch     "1" when child is a batch recorded here and parent one of its members
          gen       the parent's generation (retries that reopened it): an older one than the child
                    (or batch) was reopened for is ignored
  Derived: job:<id>, deps:<id>, flow:<id>, members:<id>, results:<id>, children:<id>, finished:<id>,
           waiting, dead, relay, what _flow.lua's release and give_up touch
  Returns: n
]]
--- @include "_clock"
--- @include "_events"
--- @include "_flow"
--- @include "_revive"
local n = tonumber(ARGV[1])
local now = now_ms()
for i = 0, n - 1 do
  local b = 1 + i * 7
  local child, parent, state, gen = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], tonumber(ARGV[b + 7])
  local batch = ARGV[b + 6] == '1'
  if state == 'revive' then
    if batch then batch_reopen(child, parent, ARGV[b + 5], gen, now) else revive(child, parent, gen, now) end
  elseif batch then
    batch_settle(child, parent, state, now, ARGV[b + 4], gen)
  else
    settle(child, parent, state, ARGV[b + 4], ARGV[b + 5], now, gen)
  end
end
flush_events()
return n
