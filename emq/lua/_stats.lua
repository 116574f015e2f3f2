--[[
  _stats: a queue's outcome counters, and the per-minute buckets of the dashboard's chart.
  Suffixes used here: stats, minute:<n>
]]
-- Count outcomes in the stats hash and in the current minute's bucket (kept ~65 min for the chart).
local function count(now, field, k)
  if k <= 0 then return end
  redis.call('HINCRBY', ns .. 'stats', field, k)
  if field == 'completed' or field == 'failed' then
    local minute = ns .. 'minute:' .. math.floor(now / 60000)
    -- Only this writes a bucket, so its expiry is set by the first count of each field (one command
    -- a finish less): a bucket never exists without one.
    if redis.call('HINCRBY', minute, field, k) == k then redis.call('PEXPIRE', minute, 3900000) end
  end
end
