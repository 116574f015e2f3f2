--[[
  mint: create a chunk of jobs in one round trip, each ready in its lane or scheduled.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of jobs (1..1000); then 15 fields per job:
          id          string
          if_absent   "1" when the caller chose the id: an existing job keeps it (idempotent); "0";
                      or a uniqueness spec "U<ms>|<s|f>|<key>" / "D<ms>|<key>" (_unique.lua's unique_mint)
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
          priority    integer -100..100; > 0 puts the job at the head of its lane each time it
                      becomes ready (mint, promotion), so it passes its own group's waiting work only
          meta        "" or a JSON object kept for the caller (e.g. the django.tasks backend's data)
          timeout     "<ms>,<soft ms>" time limit of each attempt and its soft limit (0: none)
  The job's hash leaves out args, kwargs, max_attempts, max_stalled, backoff and timeout while they equal
  their defaults, and due while it is now (_mint.lua's put_job, _defaults.lua).
  Derived: job:<id>, lane:<group>, ring, lanes, caps, active, paused:groups, scheduled, wake, pumpwake, stats,
           prio, quotas, queued
  Returns: {now_ms, created_1, ..., created_n}   created = 1 new job, 0 an existing job kept its id,
           the id of the job that holds the item's unique key (the call minted nothing), or
           {group, max} when the job's group ("" the queue) is at its quota (_quotas.lua: nothing
           written for that job; the others of the chunk are minted)
]]
--- @include "_clock"
--- @include "_events"
--- @include "_lane_batch"
--- @include "_mint"
--- @include "_stats"
--- @include "_unique"
--- @include "_wake"
local n = tonumber(ARGV[1])
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
local out = {now}
local created, ready = 0, 0
local batch, flush_lanes = lane_batch()  -- ready ids, one RPUSH a group at the end (_lane_batch.lua)
for i = 0, n - 1 do
  local b = 1 + i * JOB_FIELDS
  local made, now_ready, holder
  if #ARGV[b + 2] > 1 then  -- flow control: unique or debounced (_unique.lua)
    made, now_ready, holder = unique_mint(b, now, batch)
  else
    made, now_ready, holder = put_job(b, now, false, batch)  -- holder: a quota's refusal, if any
  end
  created = created + made
  if now_ready then ready = ready + 1 end
  if made == 0 and holder then out[#out + 1] = holder else out[#out + 1] = made end
  if made == 1 then emit('minted', ARGV[2 + i * JOB_FIELDS], now_ready and 'ready' or 'scheduled') end
end
flush_lanes()
count(now, 'minted', created)
if ready > 0 then wake('wake') end
flush_events()
return out
