--[[
  mint_many: create a chunk of jobs of one function, all ready now: a bulk enqueue's common case, in
  less server time a job than mint.lua (what they share is sent and checked once a chunk, not once a
  job; one HSET a job, no table built for it; one RPUSH a lane at the end).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of jobs (1..1000)
  ARGV[2..11]       what every job of the chunk shares, as mint.lua's fields of the same names:
          fn, group ("" when each job brings its own), max_attempts, lease, max_stalled, backoff,
          origin, priority, meta, timeout
  ARGV[12..]        per job: id, args (JSON list), kwargs (JSON object), and its group when ARGV[3] is ""
  No uniqueness spec and no caller-chosen id (if_absent "0": a job under an existing id is
  overwritten, as mint.lua's); the job's hash has the fields put_job writes for a job ready now.
  Derived: job:<id>, lane:<group>, ring, ring:in, lanes, caps, active, paused:groups, prio, plane:<group>,
           pseq, rhold, rout, counters, wake, stats, events
  Returns: {now_ms, n}   every job of the chunk was created
]]
local n = tonumber(ARGV[1])
local fn, shared_group, lease, priority = ARGV[2], ARGV[3], ARGV[5], tonumber(ARGV[9])
local stride = shared_group == '' and 4 or 3
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
-- The fields every job of the chunk stores beyond fn, group, state, lease and created (put_job's rules).
local tail = {}
for name, at in pairs({max_attempts = 4, max_stalled = 6, backoff = 7, timeout = 11}) do
  if ARGV[at] ~= DEFAULT[name] then put(tail, name, ARGV[at]) end
end
if ARGV[8] ~= '' then put(tail, 'origin', ARGV[8]) end
if priority ~= 0 then put(tail, 'priority', priority) end
if ARGV[10] ~= '' then put(tail, 'meta', ARGV[10]) end
-- A job's own arguments go in front of the tail, in one of these tables made once a chunk: no table a job.
local with_args, with_kwargs = {'args', '', unpack(tail)}, {'kwargs', '', unpack(tail)}
local with_both = {'args', '', 'kwargs', '', unpack(tail)}
local push, flush_lanes = lane_batch()  -- ready ids, one RPUSH a group at the end (_prelude.lua)
-- The common case: one group, in no priority mode, no priority: the ids go straight to one list.
local plain = stride == 3 and priority == 0 and not prio_on(shared_group)
local ids = {}
for b = 12, 11 + n * stride, stride do
  local id, args, kwargs = ARGV[b], ARGV[b + 1], ARGV[b + 2]
  local group = stride == 4 and ARGV[b + 3] or shared_group
  local fields = tail
  if args ~= '[]' and kwargs ~= '{}' then
    fields = with_both
    fields[2], fields[4] = args, kwargs
  elseif args ~= '[]' then
    fields = with_args
    fields[2] = args
  elseif kwargs ~= '{}' then
    fields = with_kwargs
    fields[2] = kwargs
  end
  redis.call('HSET', ns .. 'job:' .. id, 'fn', fn, 'group', group, 'state', 'ready', 'lease', lease, 'created', now,
    unpack(fields))
  if plain then
    ids[#ids + 1] = id
  else
    if priority ~= 0 then prio_mark(group) end
    push(group, id, priority > 0)
  end
  emit('minted', id, 'ready')
end
if plain then
  lane_append(shared_group, ids)
  ready_settle()
else
  flush_lanes()
end
count(now, 'minted', n)
wake('wake')
flush_events()
return {now, n}
