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
  Derived: done, cancelled, dead, dead:classes, reclaims, job:<id>
  Returns: {deleted completed, deleted cancelled, deleted dead, more 0|1, next_ms}   more = something
           is still past its age or count after this call; next_ms = ms until the oldest job left
           in any set outlives its ttl (-1: all three are empty), so a quiet queue's Pump calls
           again then, not every tick
]]
--- @include "_classes"
--- @include "_clock"
--- @include "_record"
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
  for i, id in ipairs(ids) do
    victims[i] = job_key(id)
    if suffix == 'dead' then class_tally(rec_get(job_key(id), 'error'), 0, -1) end  -- its class's count
  end
  rec_delete(victims)
  redis.call('ZREMRANGEBYRANK', z, 0, n - 1)
  redis.call('ZREM', ns .. 'reclaims', unpack(ids))
  budget = budget - n
  return n
end

-- Lower next_ms to when the oldest member of one set outlives ttl ms.
local next_ms = -1
local function next_out(suffix, ttl)
  local h = redis.call('ZRANGE', ns .. suffix, 0, 0, 'WITHSCORES')
  if not h[2] then return end
  local ms = math.max(tonumber(h[2]) + ttl - now, 0)
  if next_ms < 0 or ms < next_ms then next_ms = ms end
end

local ttl, keep, dead_ttl = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local done = trim_set('done', ttl, keep)
local cancelled = trim_set('cancelled', ttl, keep)
local dead = trim_set('dead', dead_ttl, tonumber(ARGV[4]))
next_out('done', ttl)
next_out('cancelled', ttl)
next_out('dead', dead_ttl)
return {done, cancelled, dead, more, next_ms}
