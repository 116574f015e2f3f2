--[[
  set_rate: set or clear a rate limit of one group, of every group ("*"), or of the whole queue ("").
  A hold the group (or queue; "*": every held group) was under ends now: the next claim applies the new limit to the
  starts already logged in the window, and holds it again if the window is still full.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     group name | "*" each group on its own | "" the whole queue
  ARGV[2] spec      "<limit>,<per ms>" (limit >= 1, per >= 1), or "" to clear
  Derived: rates, rhold, rout, ring, ring:in, lane:<group>, caps, active, paused:groups, wake
  Returns: 1
]]
--- @include "_ring"
--- @include "_serving"
--- @include "_wake"
-- WIDE: a field no group has, whose value (longer than hash-max-listpack-value: 64 bytes by default, 1,024
-- on the embedded server) makes rates a hashtable for good on Redis 7 and Valkey. A hash of up to 512
-- entries would be a listpack, which each lookup scans: a claim's per-chunk HMGET of its groups grew
-- with the number of limits (performance.md). Readers skip the field (engine/rates.py); it parses as
-- "0,0" for a reader that does not (an earlier version's). It leaves with the last limit.
local WIDE, WIDTH = '\0wide', 1100
local rates = ns .. 'rates'
local group, spec = ARGV[1], ARGV[2]
if spec == '' then
  redis.call('HDEL', rates, group)
  if redis.call('HLEN', rates) == 1 and redis.call('HEXISTS', rates, WIDE) == 1 then redis.call('DEL', rates) end
else
  redis.call('HSET', rates, group, spec)
  if redis.call('HEXISTS', rates, WIDE) == 0 then
    redis.call('HSET', rates, WIDE, string.rep('0', WIDTH - 2) .. ',0')
  end
end
-- "*" is every group's: each held group is looked at again (O(held groups); changing it is rare).
local groups = {group}
if group == '*' then groups = redis.call('ZRANGE', ns .. 'rhold', 0, -1) end
for _, g in ipairs(groups) do
  if redis.call('ZREM', ns .. 'rhold', g) == 1 then
    if g == '' then
      wake('wake')
    elseif redis.call('SREM', ns .. 'rout', g) == 1 and lane_exists(g)
        and not off_ring(g) then
      ring_join(g)  -- _ring.lua: the ring's membership set
      wake('wake')
    end
  end
end
return 1
