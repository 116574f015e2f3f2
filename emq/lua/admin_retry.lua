--[[
  admin_retry: give dead or cancelled jobs a fresh budget of attempts and make them ready now.
  The attempt counter is the fencing token, so it is never reset: the budget is raised instead
  (max_attempts = attempts spent (attempts - spared: finish.lua) + the job's original max_attempts,
  kept in "budget"), and the stall count starts again. The error history stays on the job.
  A job of a flow resumes the flow where it failed (_revive.lua): the jobs that died because of it
  (chain steps, after= children, a batch's callbacks, and theirs in turn) wait for it again, and a
  batch it counted for waits for it again. A job that had died waiting for a parent runs now, without
  waiting (retry the parent instead to resume the flow from there).
  A job in any other state is left as it is and its state is answered instead of "ok"; a key that
  holds no hash is quarantined (_checks.lua: dead as corrupt, answered "dead").
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, dead, dead:classes, cancelled, scheduled, quotas, queued, lane:<group>, ring, lanes, caps, active, wake, stats,
           and what a flow's reopening touches (_revive.lua)
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it is neither dead nor cancelled
]]
--- @include "_checks"
--- @include "_classes"
--- @include "_clock"
--- @include "_defaults"
--- @include "_events"
--- @include "_lanes"
--- @include "_revive"
--- @include "_quotas"
--- @include "_record"
--- @include "_wake"
local now = now_ms()
local out, ready = {}, 0
local ended = {dead = 'dead', cancelled = 'cancelled'}  -- state -> the set that lists it
for i, id in ipairs(ARGV) do
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'group', 'attempts', 'max_attempts', 'budget', 'spared', 'v', 'notify',
    'error')
  if f.err then  -- the key holds no hash: dead as corrupt (_checks.lua), nothing to run again
    redis.call('ZREM', ns .. 'scheduled', id)
    unhashed(key, id, f, now)
    out[i] = 'dead'
  elseif not f[1] then
    out[i] = 'missing'
  elseif not ended[f[1]] then
    out[i] = f[1]
  else
    local d = defaults_of(f[7])
    local budget = tonumber(f[5] or f[4] or d.max_attempts)
    rec_set(key, 'state', 'ready', 'due', now, 'stalled', 0, 'budget', budget,
      'max_attempts', tonumber(f[3] or d.attempts) - tonumber(f[6] or '0') + budget, 'revived_at', now)
    rec_unset(key, 'finished', 'reason', 'died_of', 'held_by', 'cancelled_from')
    if QUOTA == nil then QUOTA = redis.call('EXISTS', ns .. 'quotas') == 1 and {} or false end
    if QUOTA then  -- unfinished again: a quota counts it (never refused: an operator's retry)
      local mark = quota_take(f[2], false)
      if mark then rec_set(key, 'quota', mark, 'notify', rec_get(key, 'notify') or 'q') end
    end
    redis.call('ZREM', ns .. ended[f[1]], id)
    if f[1] == 'dead' then class_tally(f[9], now, -1) end
    lane_push(f[2], id, false)
    ready = ready + 1
    emit('ready', id)
    if f[8] then reopen(id, f[1], now) end
    out[i] = 'ok'
  end
end
if ready > 0 then
  redis.call('HINCRBY', ns .. 'stats', 'revived', ready)
  wake('wake')
end
flush_events()
return out
