--[[
  metrics: a queue's gauges besides its counts (counts.lua), read in one call on the server clock.
  Reads only; what a scrape, `manage.py emq status` and the dashboard show about the queue's health.
  The oldest ready job is looked for at the head of the first ARGV[2] lanes in serving order (the
  ring's head has waited longest for its turn): exact up to that many groups with ready work, a
  lower bound past it, so the cost never grows with the number of groups.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] soon_ms   leases expiring within this many ms count as expiring soon
  ARGV[2] heads     most lanes looked at for the oldest ready job (1..1000)
  Derived: ring, lanes, lane:<group>, job:<id>, leases, leader, stats, minute:<n>
  Returns: {now_ms, oldest_ready_due_ms|-1, leases_expiring_soon, groups_with_work, leader|"",
            leader_pttl_ms, completed_last_minute, failed_last_minute, stat_1, value_1, ...}
           the last minute is the last whole minute; the stats pairs are the queue's stats hash
]]
--- @include "_clock"
--- @include "_record"
local soon, heads = tonumber(ARGV[1]), tonumber(ARGV[2])
local now = now_ms()
local oldest = -1
for _, group in ipairs(redis.call('LRANGE', ns .. 'ring', 0, heads - 1)) do
  local id = redis.call('LINDEX', ns .. 'lane:' .. group, 0) or redis.call('HGET', ns .. 'solo', group)
  if id then
    -- No due: it was due when created. A pcall: a key that holds no hash (an error table) is skipped.
    local f = rec_try_fields(job_key(id), 'due', 'created')
    local due = tonumber(f[1] or f[2] or '-1')
    if due >= 0 and (oldest < 0 or due < oldest) then oldest = due end
  end
end
local last = redis.call('HMGET', ns .. 'minute:' .. (math.floor(now / 60000) - 1), 'completed', 'failed')
local out = {now, oldest, redis.call('ZCOUNT', ns .. 'leases', '-inf', now + soon), redis.call('SCARD', ns .. 'lanes'),
  redis.call('GET', ns .. 'leader') or '', redis.call('PTTL', ns .. 'leader'), last[1] or 0, last[2] or 0}
for _, v in ipairs(redis.call('HGETALL', ns .. 'stats')) do out[#out + 1] = v end
return out
