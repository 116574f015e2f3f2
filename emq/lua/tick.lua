--[[
  tick: one step of the leading Pump — keep the lead, promote due jobs, reclaim expired
  leases, and say how long the Pump may park before its next duty.
  A Pump that does not hold the lead returns at once; any number may call this.
  A server stall (a fork of a large dataset, a slow script, a paused VM) lets leases run out that no
  worker could renew. The leading Pump's tick knows when it planned to run (pumplast): run later than
  that by more than STALL_MIN_MS, beyond the Pump's own lateness (ARGV[6]: its thread was slow, not
  the server), by the Pump that ticked last, the server stood still, and the leases that ran out
  since the last tick get one more lease period from now, as after a restart (_pump.lua), for the
  stall's last ARGV[5] ms at most (EMQ_STALL_GRACE). A Pump new to the lead never takes the lead's
  gap for a stall: its predecessor may have died with its workers.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] pump      pump id
  ARGV[2] ttl       ms the lead lasts without a tick
  ARGV[3] limit     most jobs to promote and leases to reclaim in this step
  ARGV[4] park      ms the Pump parks at most
  ARGV[5] grace     ms of a stall forgiven at most (0: none)
  ARGV[6] late      ms this Pump sent the tick after the time its last tick planned (0: on time or early)
  Jobs waiting for a parent whose record vanished are looked for a few at a time (_orphans.lua).
  An idle queue's tick, every EMQ_PUMP_PARK, is most of an idle worker's traffic (docs/reference/performance.md):
  its two strings are read in one MGET, whether jobs wait and relay entries queue is learnt in one EXISTS, and
  pumplast alone tells claims and holds when it ticks next (_wake.lua's pump_next).
  Derived: leader, pumplast, scheduled, leases, repeat:next, rhold, rout, waiting, waiting:at, relay,
           plus what promote, reclaim and the look at waiting jobs touch
  Returns: {leader 0|1, promoted, reclaimed, park_ms, repeat_due 0|1, now_us, relay, stall_ms, graced, far}
           now_us = the server's clock in microseconds: park_ms counts from its millisecond, so
           a Pump that parked park_ms from the reply would wake up to 1 ms after its duty;
           relay = entries in the relay list, which the leading Pump forwards (flow_out);
           stall_ms = how long the server stood still before this tick (0: it did not);
           graced = expired leases the stall kept;
           far = {child, parent, parent's queue, ...}: waiting jobs' parents in other queues to ask about
]]
--- @include "_events"
--- @include "_holds"
--- @include "_orphans"
--- @include "_pump"
--- @include "_wake"
local me, ttl, limit, park = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local grace, late = tonumber(ARGV[5]), tonumber(ARGV[6])
local STALL_MIN_MS = 100  -- a tick this much later than planned is within a busy server's and network's noise
local lead, last = unpack(redis.call('MGET', ns .. 'leader', ns .. 'pumplast'))  -- false for a missing key
if lead and lead ~= me then return {0, 0, 0, park, 0, 0, 0, 0, 0, {}} end
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

-- The leading Pump's last tick (pumplast), written at the end of its every tick.
local stall_ms, stall_from, graced = 0, nil, 0
do
  local who, at, planned = pump_plan(last)  -- _wake.lua
  if who == me and now - planned - late > STALL_MIN_MS then
    stall_ms = now - planned - late
    if grace > 0 then stall_from = math.max(at, now - grace) end
  end
end

local promoted, reclaimed = 0, 0
local due = head('scheduled')
if due and due <= now then
  promoted = promote_due(now, limit)
  due = head('scheduled')
end
local expiry = head('leases')
if expiry and expiry <= now then
  local ids
  ids, graced = reclaim_expired(now, limit, stall_from)
  reclaimed = #ids
  expiry = head('leases')
end
-- Whether jobs wait (1) and relay entries queue (2, the key named twice), in one EXISTS: an idle queue has neither.
local queued = redis.call('EXISTS', ns .. 'waiting', ns .. 'relay', ns .. 'relay')
local far = orphans_check(now, queued % 2 == 1)  -- _orphans.lua
local held = head('rhold')  -- rate-limit holds (_holds.lua)
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
-- When this Pump will tick next: a claim whose lease expires sooner, or a hold that ends sooner, wakes it
-- (_wake.lua's pump_next). No expiry: a stall longer than the lead's ttl must still find it (a queue's one
-- small key); a dead Pump's planned tick passes, and wakes no one. A stall with more expired leases than one
-- tick takes is left in it: the next tick (at once) forgives the rest, its plan already past meanwhile.
if not (stall_from and expiry and expiry <= now) then
  redis.call('SET', ns .. 'pumplast', me .. '|' .. now .. '|' .. next_at)  -- read by pump_plan (_wake.lua)
end
flush_events()
-- An entry this tick relayed into an empty list woke the Pump (_flow.lua): its next tick, at once, counts it.
return {1, promoted, reclaimed, math.max(next_at - now, 0), repeat_due, now_us,
  queued >= 2 and redis.call('LLEN', ns .. 'relay') or 0, stall_ms, graced, far}
