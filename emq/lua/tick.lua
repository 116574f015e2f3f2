--[[
  tick: one step of the leading Pump — keep the lead, promote due jobs, reclaim expired
  leases, and say how long the Pump may park before its next duty.
  A Pump that does not hold the lead returns at once; any number may call this.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] pump      pump id
  ARGV[2] ttl       ms the lead lasts without a tick
  ARGV[3] limit     most jobs to promote and leases to reclaim in this step
  ARGV[4] park      ms the Pump parks at most
  Derived: leader, pumpnext, scheduled, leases, repeat:next, rhold, rout, plus what promote and reclaim touch
  Returns: {leader 0|1, promoted, reclaimed, park_ms, repeat_due 0|1, now_us, relay}
           now_us = the server's clock in microseconds: park_ms counts from its millisecond, so
           a Pump that parked park_ms from the reply would wake up to 1 ms after its duty;
           relay = entries in the relay list, which the leading Pump forwards (flow_out)
]]
local me, ttl, limit, park = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local lead = redis.call('GET', ns .. 'leader')
if lead and lead ~= me then return {0, 0, 0, park, 0, 0, 0} end
if lead then
  redis.call('PEXPIRE', ns .. 'leader', ttl)
else
  redis.call('SET', ns .. 'leader', me, 'PX', ttl)
end
-- TIME read once, as now_ms() does, keeping its microseconds for the Pump's park (see Returns).
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now = math.floor(now_us / 1000)

-- The head of a zset: its score, or nil when empty.
local function head(suffix)
  local h = redis.call('ZRANGE', ns .. suffix, 0, 0, 'WITHSCORES')
  if h[2] then return tonumber(h[2]) end
  return nil
end

local promoted, reclaimed = 0, 0
local due = head('scheduled')
if due and due <= now then
  promoted = promote_due(now, limit)
  due = head('scheduled')
end
local expiry = head('leases')
if expiry and expiry <= now then
  reclaimed = #reclaim_expired(now, limit)
  expiry = head('leases')
end
local held = head('rhold')  -- rate-limit holds (_flowctl.lua)
if held and held <= now then
  rate_release(now, limit)
  held = head('rhold')
end
local rep = head('repeat:next')
-- The earliest duty; not ipairs over {due, expiry, rep}: it stops at the first nil.
local next_at = now + park
if due and due < next_at then next_at = due end
if expiry and expiry < next_at then next_at = expiry end
if rep and rep < next_at then next_at = rep end
if held and held < next_at then next_at = held end
local repeat_due = 0
if rep and rep <= now then repeat_due = 1 end
-- When this Pump will tick next: a claim whose lease expires sooner wakes it (bclaim).
redis.call('SET', ns .. 'pumpnext', next_at, 'PX', ttl)
flush_events()
return {1, promoted, reclaimed, math.max(next_at - now, 0), repeat_due, now_us, redis.call('LLEN', ns .. 'relay')}
