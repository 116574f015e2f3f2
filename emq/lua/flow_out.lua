--[[
  flow_out: the Pump's read of this queue's relay list (parents' outcomes for jobs in other
  queues): drop the entries it has forwarded, up to a sequence number, and hand out the next.
  Entries are acknowledged by number, never by count, so two Pumps that both forwarded (a lead
  changing hands) cannot drop an entry neither forwarded; forwarding twice is harmless.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] acked     sequence number of the last entry forwarded (0: none yet)
  ARGV[2] limit     most entries to hand out (1..1000)
  Derived: relay
  Returns: {entry, ...} up to limit entries "<seq>|<JSON {q, c, p, s, r, w, b}>", oldest first
]]
local acked, limit = tonumber(ARGV[1]), tonumber(ARGV[2])
local relay = ns .. 'relay'
local head = redis.call('LRANGE', relay, 0, limit - 1)
local done = 0
for _, entry in ipairs(head) do
  if tonumber(string.match(entry, '^(%d+)|')) > acked then break end
  done = done + 1
end
if done == 0 then return head end
redis.call('LTRIM', relay, done, -1)
return redis.call('LRANGE', relay, 0, limit - 1)
