--[[
  flow_open: record a batch or a chain in this queue, a chunk of its members at a time, for the
  dashboard (Flows) and, for a batch, the count its members' ends decrement. Every member of a
  batch is recorded before any is minted, so the batch cannot settle before its last member.
  A batch's record expires ttl ms after it settled; a chain's ttl ms after it was opened.
  Records whose time is up leave the flows index here, a few per call.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the flow's id
  ARGV[2] kind      "batch" | "chain"
  ARGV[3] total     members (steps) in all
  ARGV[4] ttl       ms (see above)
  ARGV[5] callbacks JSON {"on_complete": [queue, id], ...} ("{}": none)
  then 2 fields per member of this chunk (1..1000 members), in order: JSON [queue, job id], job id
  Derived: flow:<id>, members:<id>, deps:<id>, flows
  Returns: the members recorded so far
]]
local id, kind, total, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local key = ns .. 'flow:' .. id
if redis.call('EXISTS', key) == 0 then
  redis.call('HSET', key, 'kind', kind, 'total', total, 'ttl', ttl, 'callbacks', ARGV[5], 'created', now)
  if kind == 'batch' then redis.call('HSET', key, 'state', 'waiting') else redis.call('PEXPIRE', key, ttl) end
  redis.call('ZADD', ns .. 'flows', now, id)
end
local refs, ids = {}, {}
for i = 6, #ARGV, 2 do
  refs[#refs + 1] = ARGV[i]
  ids[#ids + 1] = ARGV[i + 1]
end
local recorded = redis.call('RPUSH', ns .. 'members:' .. id, unpack(refs))
if kind == 'batch' then
  redis.call('SADD', ns .. 'deps:' .. id, unpack(ids))
else
  redis.call('PEXPIRE', ns .. 'members:' .. id, ttl)
end
for _, old in ipairs(redis.call('ZRANGEBYSCORE', ns .. 'flows', '-inf', now - ttl, 'LIMIT', 0, 10)) do
  if redis.call('EXISTS', ns .. 'flow:' .. old) == 0 then redis.call('ZREM', ns .. 'flows', old) end
end
return recorded
