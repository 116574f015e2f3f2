--[[
  _trim: retention of the sets of finished jobs (done, cancelled), a bounded slice a call.
  Suffixes used here: done, cancelled, job:<id>
]]
--- @include "_record"
-- Retention of a set of finished jobs (done, cancelled): drop what is older than ttl ms or over keep,
-- at most added + 100 a call (a bounded slice), with their hashes.
local function trim(suffix, now, ttl, keep, added)
  local z = ns .. suffix
  local old = redis.call('ZCOUNT', z, '-inf', now - ttl)
  local excess = math.min(math.max(old, redis.call('ZCARD', z) - keep), added + 100)
  if excess > 0 then
    local victims = redis.call('ZRANGE', z, 0, excess - 1)
    for j = 1, #victims do victims[j] = job_key(victims[j]) end
    rec_delete(victims)
    redis.call('ZREMRANGEBYRANK', z, 0, excess - 1)
  end
end
