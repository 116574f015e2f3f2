--[[
  admin_delete: delete jobs that wait or have finished (scheduled, waiting for parents, completed, dead or
  cancelled).
  Ready and active jobs are refused: a ready id sits inside a lane list and an active one is
  held by a worker; cancel them instead (cancel.lua). Their state is answered instead of "ok".
  A deleted scheduled or waiting job that others wait for ends for them as cancelled (_flow.lua); a
  waiting one forgets the parents it waited for (their end finds no job to tell). A key that
  holds no hash (written by something other than emq) is deleted too, once quarantined (_checks.lua).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[i] id        one job id per argument (1..1000 of them)
  Derived: job:<id>, scheduled, waiting, deps:<id>, done, dead, cancelled, reclaims, stats, queued, unknown, dead:classes,
           and what a flow's end touches (_flow.lua)
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it cannot be deleted
]]
--- @include "_checks"
--- @include "_classes"
--- @include "_clock"
--- @include "_events"
--- @include "_flow"
--- @include "_record"
--- @include "_unknown"
local deletable = {scheduled = 'scheduled', waiting = 'waiting', completed = 'done', dead = 'dead',
  cancelled = 'cancelled'}
local out, now = {}, nil
for i, id in ipairs(ARGV) do
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'notify', 'unknown', 'fn', 'error')
  local state = f[1]
  if f.err then  -- the key holds no hash: dead as corrupt (_checks.lua), then deleted as a dead job is
    now = now or now_ms()
    redis.call('ZREM', ns .. 'scheduled', id)
    unhashed(key, id, f, now)
    f, state = {'dead', false, false, false, rec_get(key, 'error')}, 'dead'  -- its quarantine's record
  end
  if not state then
    out[i] = 'missing'
  elseif not deletable[state] then
    out[i] = state
  else
    if (state == 'scheduled' or state == 'waiting') and f[2] then
      now = now or now_ms()
      flow_finished(id, 'cancelled', now, f[2])
    end
    if f[3] then unknown_mark(key, f[4], now or now_ms(), false) end  -- held for its name (finish.lua)
    if state == 'waiting' then redis.call('DEL', ns .. 'deps:' .. id) end
    redis.call('ZREM', ns .. deletable[state], id)
    if state == 'dead' then class_tally(f[5], 0, -1) end
    redis.call('ZREM', ns .. 'reclaims', id)
    rec_delete({key})
    out[i] = 'ok'
  end
end
flush_events()
return out
