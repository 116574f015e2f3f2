--[[
  flow_mint: create a chunk of jobs that belong to a flow — jobs after other jobs (after=),
  chain steps, batch members and callbacks — in one round trip. A job with parents is minted
  "waiting" (in the waiting set, its parent ids in deps:<id>) until every parent settled; one
  without is ready or scheduled as mint makes it. Parents in this queue are checked before
  anything is written and linked here (a parent that already settled is honoured at once);
  parents in other queues stay pending until flow_link and the relay tell (see _flow.lua).
  A parent may be a job minted earlier in the same chunk (a chain's previous step).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of jobs (1..1000); then per job the 15 fields of mint.lua, then:
          kind      how a failed parent is named in the reason: "parent" | "chain step" | "batch"
          when      "completed" run once every parent completed, dead when one did not |
                    "finished" run once every parent settled | "failed" run only if one did not
                    (cancelled otherwise)
          pass      "1": each parent's result (a batch's summary) becomes the first argument
          flow      "" or JSON [queue, flow id]: the batch or chain the job belongs to
          batch     "" | "L" | "R" | "RC": a member of that batch, recorded in this queue or another
                    (RC: of a chord, in another queue: its end relays its result too)
          nlocal    parents in this queue
          nremote   parents in other queues
          remote    "" or JSON {parent id: its queue} of the parents in other queues (kept on the job:
                    the Pump's check of waiting jobs asks their queues about them, _orphans.lua)
          then nlocal + nremote parent ids
  Derived: job:<id>, deps:<id>, children:<id>, flow:<id>, waiting, what mint and _flow.lua touch
  A job's "remote" field: the JSON above, for a job that waits for parents in other queues.
  A queue's quotas count these jobs but never refuse them: a workflow cut in the middle would leave
  jobs waiting for parents that never come (_quotas.lua).
  Returns: {now_ms, created_1, ..., created_n}  created = 1 new job, 0 an existing job kept its id;
           {-1, i, parent id} when job i names a parent in this queue that does not exist
           (nothing was written)
]]
--- @include "_clock"
--- @include "_events"
--- @include "_flow"
--- @include "_lane_batch"
--- @include "_mint"
--- @include "_parents"
--- @include "_record"
--- @include "_stats"
--- @include "_wake"
local n = tonumber(ARGV[1])
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
local FLOW_FIELDS = 8
local starts, here = {}, {}

-- First pass, before any write: where each job's fields start, and every local parent exists.
local b = 1
for i = 1, n do
  starts[i] = b
  local nl, nr = tonumber(ARGV[b + JOB_FIELDS + 6]), tonumber(ARGV[b + JOB_FIELDS + 7])
  for j = 1, nl do
    local pid = ARGV[b + JOB_FIELDS + FLOW_FIELDS + j]
    if not here[pid] and not parent_state(pid) then return {-1, i, pid} end
  end
  here[ARGV[b + 1]] = true
  b = b + JOB_FIELDS + FLOW_FIELDS + nl + nr
end

-- Ready jobs without parents are pushed once per group at the end, as mint.lua does (lane_batch).
local push, flush_lanes = lane_batch()
local ready = 0
local function hold() end

-- The absolute due ms of a due field ("" now, "+<ms>", "@<epoch ms>").
local function due_of(spec)
  if spec == '' then return now end
  local v = tonumber(string.sub(spec, 2))
  if string.sub(spec, 1, 1) == '+' then return now + v end
  return v
end

-- Link a waiting job to a parent in this queue, or settle it at once when the parent has settled.
local function link(id, pid)
  local state, result, reason, is_batch = parent_state(pid)
  if SETTLED[state] then return settle(id, pid, state, result, reason, now) end
  redis.call('SADD', ns .. 'children:' .. pid, cjson.encode({'', id}))
  if not is_batch then rec_set(job_key(pid), 'notify', 1) end
end

local out, created = {now}, 0
for i = 1, n do
  b = starts[i]
  local id = ARGV[b + 1]
  local key = job_key(id)
  local f = b + JOB_FIELDS
  local nl, nr = tonumber(ARGV[f + 6]), tonumber(ARGV[f + 7])
  local made, now_ready, due
  if nl + nr == 0 then
    made, now_ready = put_job(b, now, false, push, false)  -- counted, never refused (_quotas.lua)
  else
    due = due_of(ARGV[b + 7])
    ARGV[b + 7] = ''  -- put_job takes its ready branch, and hold() keeps the job out of its lane
    made = put_job(b, now, false, hold, false)
  end
  out[#out + 1] = made
  if made == 1 then
    created = created + 1
    local fields = {}
    if due then fields = {'state', 'waiting', 'due', due, 'kind', ARGV[f + 1], 'when', ARGV[f + 2], 'pass', ARGV[f + 3]} end
    if ARGV[f + 4] ~= '' then fields[#fields + 1] = 'flow'; fields[#fields + 1] = ARGV[f + 4] end
    if due and ARGV[f + 8] ~= '' then fields[#fields + 1] = 'remote'; fields[#fields + 1] = ARGV[f + 8] end
    if ARGV[f + 5] ~= '' then
      for _, v in ipairs({'batch', ARGV[f + 5], 'notify', 1}) do fields[#fields + 1] = v end
    end
    if #fields > 0 then rec_set(key, unpack(fields)) end
    if due then
      local pids = {}
      for j = 1, nl + nr do pids[j] = ARGV[f + FLOW_FIELDS + j] end
      redis.call('SADD', ns .. 'deps:' .. id, unpack(pids))
      redis.call('ZADD', ns .. 'waiting', now, id)
      emit('minted', id, 'waiting')
      for j = 1, nl do link(id, pids[j]) end
    else
      if now_ready then ready = ready + 1 end
      emit('minted', id, now_ready and 'ready' or 'scheduled')
    end
  end
end
flush_lanes()
count(now, 'minted', created)
if ready > 0 then wake('wake') end
flush_events()
return out
