--[[
  set_cap: set or clear a group's concurrency cap and put its lane on or off the ring to match.
  Only leases claimed under a cap are counted (_held.lua's active_add), so a group that gains a cap
  has its leases of the moment counted here (afresh): the lease set is walked once, a chunk at a time. That
  is O(jobs in flight), never O(backlog), and only on this rare, manual change.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     group name
  ARGV[2] cap       integer >= 1, or "" to clear the cap
  Derived: caps, active, held, leases, job:<id>, ring, lane:<group>, wake
  Returns: 1
]]
--- @include "_chunks"
--- @include "_record"
--- @include "_ring_fix"
--- @include "_serving"
--- @include "_wake"
local group = ARGV[1]

-- Count the group's leases afresh: each goes into held, and active is set to their number. Set,
-- not added: a count left from before (an older emq counted every group's leases, and only held
-- ones are given back now) must not keep a newly capped group below its cap for good.
local function count_in_flight()
  local found, start = {}, 0
  repeat
    local ids = redis.call('ZRANGE', ns .. 'leases', start, start + 999)
    for _, id in ipairs(ids) do
      if rec_try_get(job_key(id), 'group') == group then  -- a key with no hash: not counted
        found[#found + 1] = id
        found[#found + 1] = group
      end
    end
    start = start + #ids
  until #ids < 1000
  if #found == 0 then
    redis.call('HDEL', ns .. 'active', group)
    return
  end
  each_chunk(found, function(pairs_) redis.call('HSET', ns .. 'held', unpack(pairs_)) end)
  redis.call('HSET', ns .. 'active', group, #found / 2)
end

if ARGV[2] == '' then
  redis.call('HDEL', ns .. 'caps', group)
elseif redis.call('HSET', ns .. 'caps', group, ARGV[2]) == 1 then
  count_in_flight()
end
ring_fix(group)
if lane_exists(group) then wake('wake') end
return 1
