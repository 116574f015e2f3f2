--[[
  retain: one bounded step of retention for finished jobs, on the Pump's schedule, so a quiet queue
  is trimmed too (finish and cancel trim only as jobs end). Completed and cancelled jobs go when
  older than ARGV[1] ms or past the newest ARGV[2]; dead ones when older than ARGV[3] ms or past
  the newest ARGV[4]; oldest first, at most ARGV[5] jobs this call (hashes deleted with them).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] ttl       ms a completed or cancelled job is kept
  ARGV[2] keep      at most this many completed (and, apart, cancelled) jobs are kept
  ARGV[3] dead_ttl  ms a dead job is kept
  ARGV[4] dead_keep at most this many dead jobs are kept
  ARGV[5] limit     most jobs deleted in this call, 1..1000
  Derived: done, cancelled, dead, reclaims, job:<id>
  Returns: {deleted completed, deleted cancelled, deleted dead, more 0|1}   more = something is
           still past its age or count after this call
]]
local now = now_ms()
local budget = tonumber(ARGV[5])
local more = 0

-- Delete up to budget of the oldest members of one set past ttl ms or past the newest keep.
local function trim_set(suffix, ttl, keep)
  local z = ns .. suffix
  local excess = math.max(redis.call('ZCOUNT', z, '-inf', now - ttl), redis.call('ZCARD', z) - keep)
  local n = math.min(excess, budget)
  if excess > n then more = 1 end
  if n <= 0 then return 0 end
  local ids = redis.call('ZRANGE', z, 0, n - 1)
  local victims = {}
  for i, id in ipairs(ids) do victims[i] = ns .. 'job:' .. id end
  redis.call('DEL', unpack(victims))
  redis.call('ZREMRANGEBYRANK', z, 0, n - 1)
  redis.call('ZREM', ns .. 'reclaims', unpack(ids))
  budget = budget - n
  return n
end

local ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2])
local done = trim_set('done', ttl, keep)
local cancelled = trim_set('cancelled', ttl, keep)
local dead = trim_set('dead', tonumber(ARGV[3]), tonumber(ARGV[4]))
return {done, cancelled, dead, more}
