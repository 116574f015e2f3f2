--[[
  _solo: where a group's ready ids live: its list lane:<group>, or, for a batch mint's lone job, the
  solo hash (group -> id); never both. Every reader of a lane reads both places.
  Suffixes used here: lane:<group>, solo
]]
-- solo (hash): group -> its one ready id, for a group a batch mint found without ready work and gave one
-- job (_lane_batch.lua). bclaim takes a chunk of the ring's solos with one HMGET and one HDEL, where
-- a list of one id cost a key, its LPOP and its delete a group. A group's ready ids are its solo or its
-- list lane:<group>, never both (a second id makes the solo the list's first entry: lane_unsolo), and a
-- group with a solo is in the lane set; lane_len and lane_exists (_serving.lua) read both places.
local function lane_len(group)
  return redis.call('LLEN', ns .. 'lane:' .. group) + redis.call('HEXISTS', ns .. 'solo', group)
end

-- A group's list just got its first entry, at the head (front) or the tail: a solo the group had goes to
-- the other end (it came first, or the entry jumps the queue). Returns whether there was one.
local function lane_unsolo(group, front)
  local old = redis.call('HGET', ns .. 'solo', group)
  if not old then return false end
  redis.call('HDEL', ns .. 'solo', group)
  redis.call(front and 'RPUSH' or 'LPUSH', ns .. 'lane:' .. group, old)
  return true
end
