--[[
  mint: create a chunk of jobs in one round trip, each ready in its lane or scheduled.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of jobs (1..1000); then 12 fields per job:
          id          string
          if_absent   "1" when the caller chose the id: an existing job keeps it (idempotent)
          fn          registered job name
          args        JSON list
          kwargs      JSON object
          group       lane name ("_" for the default lane)
          due         "" ready now | "+<ms>" after a delay on the server clock | "@<epoch ms>"
          max_attempts integer >= 1
          lease       ms
          max_stalled integer >= 0
          backoff     "<base s>,<cap s>"
          origin      "" or what minted it (e.g. "repeat:<name>")
  Derived: job:<id>, lane:<group>, ring, lanes, caps, active, scheduled, wake, pumpwake, stats
  Returns: {now_ms, created_1, ..., created_n}   created = 1 new job, 0 an existing job kept its id
]]
local n = tonumber(ARGV[1])
local now = now_ms()
local out = {now}
local created, ready = 0, 0
-- Ready ids are pushed once per group at the end (one RPUSH for a whole chunk of one group),
-- groups in order of first appearance, as one lane_push per job would have ordered them.
local ready_ids, groups = {}, {}
for i = 0, n - 1 do
  local b = 1 + i * 12
  local id, group, due_spec = ARGV[b + 1], ARGV[b + 6], ARGV[b + 7]
  local key = ns .. 'job:' .. id
  if ARGV[b + 2] == '1' and redis.call('EXISTS', key) == 1 then
    out[#out + 1] = 0
  else
    local due = now
    if due_spec ~= '' then
      local v = tonumber(string.sub(due_spec, 2))
      if string.sub(due_spec, 1, 1) == '+' then due = now + v else due = v end
    end
    local state = 'ready'
    if due > now then state = 'scheduled' end
    redis.call('HSET', key, 'fn', ARGV[b + 3], 'args', ARGV[b + 4], 'kwargs', ARGV[b + 5],
      'group', group, 'state', state, 'attempts', 0, 'max_attempts', ARGV[b + 8],
      'lease', ARGV[b + 9], 'max_stalled', ARGV[b + 10], 'backoff', ARGV[b + 11],
      'created', now, 'due', due)
    if ARGV[b + 12] ~= '' then redis.call('HSET', key, 'origin', ARGV[b + 12]) end
    if state == 'ready' then
      if not ready_ids[group] then
        ready_ids[group] = {}
        groups[#groups + 1] = group
      end
      local ids = ready_ids[group]
      ids[#ids + 1] = id
      ready = ready + 1
    else
      schedule(id, due)
    end
    created = created + 1
    out[#out + 1] = 1
  end
end
for _, group in ipairs(groups) do
  local ids = ready_ids[group]
  if redis.call('RPUSH', ns .. 'lane:' .. group, unpack(ids)) == #ids then
    lane_joined(group)
  end
end
count(now, 'minted', created)
if ready > 0 then wake('wake') end
return out
