--[[
  mint_one: create one job, ready in its lane or scheduled: an enqueue's common case, in less
  server time than mint.lua's loop over a chunk (no batcher of ready ids, no unique-job helpers).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV    as mint.lua's for one job: ARGV[1] = 1, then its 15 fields (id, if_absent, fn, args,
          kwargs, group, due, max_attempts, lease, max_stalled, backoff, origin, priority, meta,
          timeout); if_absent is "1" or "0": a unique or debounced job goes through mint.lua
  Derived: job:<id>, lane:<group>, ring, ring:in, lanes, caps, active, paused:groups, prio, quotas, queued, rhold, rout,
           scheduled, wake, pumpwake, counters, stats
  Returns: {now_ms, created}   created = 1 new job, 0 an existing job kept its id, or {group, max}: at its
           quota, nothing written (as mint.lua's)
  Errors:  "ERR mint_one takes no uniqueness spec" when if_absent is one (nothing written)
]]
--- @include "_clock"
--- @include "_events"
--- @include "_lanes"
--- @include "_mint"
--- @include "_stats"
--- @include "_wake"
if #ARGV[3] > 1 then return redis.error_reply('ERR mint_one takes no uniqueness spec') end
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
local made, ready, refused = put_job(1, now, false, lane_push)
if refused then return {now, refused} end  -- its group (or the queue) is at its quota: nothing written
count(now, 'minted', made)
if ready then wake('wake') end
if made == 1 then emit('minted', ARGV[2], ready and 'ready' or 'scheduled') end
flush_events()
return {now, made}
