--[[
  flow_open: record a batch, a chord or a chain in this queue, a chunk of its members at a time, for
  the dashboard (Flows) and, for a batch or chord, the count its members' ends decrement. Every member of a
  batch is recorded before any is minted, so the batch cannot settle before its last member.
  A batch's (chord's) record expires ttl ms after it settled; a chain's ttl ms after it was opened.
  Records whose time is up leave the flows index here, a few per call.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the flow's id
  ARGV[2] kind      "batch" | "chord" | "chain"
  ARGV[3] total     members (steps) in all
  ARGV[4] ttl       ms (see above)
  ARGV[5] callbacks JSON {"on_complete": [queue, id], ...} ("{}": none)
  ARGV[6] limit     bytes a chord's results may take in all (EMQ_MAX_PAYLOAD; _chord.lua); 0 otherwise
  then 2 fields per member of this chunk (1..1000 members), in order: JSON [queue, job id], job id
  Derived: flow:<id>, members:<id>, deps:<id>, flows
  Returns: the members recorded so far
]]
--- @include "_clock"
local id, kind, total, ttl = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local now = now_ms()
local key = ns .. 'flow:' .. id
local counted = kind ~= 'chain'  -- a batch or a chord: its members' ends are counted
if redis.call('EXISTS', key) == 0 then
  redis.call('HSET', key, 'kind', kind, 'total', total, 'ttl', ttl, 'callbacks', ARGV[5], 'created', now)
  if counted then redis.call('HSET', key, 'state', 'waiting') else redis.call('PEXPIRE', key, ttl) end
  if kind == 'chord' then redis.call('HSET', key, 'limit', ARGV[6]) end
  redis.call('ZADD', ns .. 'flows', now, id)
end
local refs, ids = {}, {}
for i = 7, #ARGV, 2 do
  refs[#refs + 1] = ARGV[i]
  ids[#ids + 1] = ARGV[i + 1]
end
local recorded = redis.call('RPUSH', ns .. 'members:' .. id, unpack(refs))
if counted then
  redis.call('SADD', ns .. 'deps:' .. id, unpack(ids))
else
  redis.call('PEXPIRE', ns .. 'members:' .. id, ttl)
end
for _, old in ipairs(redis.call('ZRANGEBYSCORE', ns .. 'flows', '-inf', now - ttl, 'LIMIT', 0, 10)) do
  if redis.call('EXISTS', ns .. 'flow:' .. old) == 0 then redis.call('ZREM', ns .. 'flows', old) end
end
return recorded
