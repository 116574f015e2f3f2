--[[
  extend: renew the leases of a batch of active jobs held with their current tokens.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] ms        new lease length from now (server clock)
  then 2 fields per item: id, token
  A job whose hash is gone answers missing and releases the count its lease held in its group; one
  whose key holds no hash answers missing too, and ends dead as corrupt (_checks.lua).
  Derived: job:<id>, leases, held, active, caps, dead, stats
  Each renewal records when it was granted (renewed): the sweep knows a lease from before a restart.
  Returns: {status_1, ...}   status = "ok" | "cancelled" (the holder's job was cancelled: stop it) |
                             "stale" (token not current or job not active) | "missing"
]]
--- @include "_checks"
--- @include "_clock"
--- @include "_held"
--- @include "_record"
local ms = tonumber(ARGV[1])
local now = now_ms()
local out, zadd = {}, {}
for i = 2, #ARGV, 2 do
  local id, token = ARGV[i], ARGV[i + 1]
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'attempts')
  if f.err then  -- the key holds no hash: the job ends dead as corrupt (_checks.lua), its lease with it
    leases_end({id})
    unhashed(key, id, f, now)
    out[#out + 1] = 'missing'
  elseif not f[1] then
    leases_end({id})  -- its hash is gone: its group's count is released (_held.lua)
    out[#out + 1] = 'missing'
  elseif f[1] == 'cancelled' and f[2] == token then
    out[#out + 1] = 'cancelled'
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = 'stale'
  else
    rec_set(key, 'lease_until', now + ms, 'renewed', now)
    zadd[#zadd + 1] = now + ms
    zadd[#zadd + 1] = id
    out[#out + 1] = 'ok'
  end
end
if #zadd > 0 then redis.call('ZADD', ns .. 'leases', 'XX', unpack(zadd)) end
return out
