--[[
  _mint: a new job: its hash from a mint's ARGV fields, then its lane or the schedule set; the steps
  of the ready counter (_counters.lua) and of priorities (_prio.lua) that only a mint takes.
  Suffixes used here: job:<id>, counters, lanes, prio, quotas, wake
]]
--- @include "_counters"
--- @include "_defaults"
--- @include "_prio"
--- @include "_quotas"
--- @include "_record"
--- @include "_schedule"
--- @include "_wake"
-- ARGV fields per job in mint's layout: id, if_absent, fn, args, kwargs, group, due, max_attempts,
-- lease, max_stalled, backoff, origin, priority, meta, timeout (emq/core/stored.py's mint_row builds it).
local JOB_FIELDS = 15

-- The fields put_job writes only when they differ from DEFAULT: name, then ARGV offset in the job's fields.
local OPTIONAL = {'args', 4, 'kwargs', 5, 'max_attempts', 8, 'max_stalled', 10, 'backoff', 11, 'timeout', 15}

-- Before a mint's first lane change: a queue whose lanes are all empty starts exact counters
-- (_counters.lua's rule; only a mint calls it).
local function tally_open()
  if tally_mode() == false and redis.call('EXISTS', ns .. 'lanes') == 0 then
    redis.call('HSET', ns .. 'counters', 'mode', 'exact', 'ready', 0)
    counters_mode = 'exact'
  end
  return counters_mode
end

-- Whether the queue has quotas (_quotas.lua), read before a mint's first write with what lane_push reads
-- anyway (_lanes.lua): the priority set, and whether a token waits in the wake list (_wake.lua's
-- WAKE_TOKEN). One EXISTS of prio and quotas (1 each) and the wake list (3, named three times): the
-- usual queue, with neither, learns all three for one key lookup more than lane_push's (each key named
-- in a command is a lookup); a queue with exactly one of them asks which (EXISTS quotas).
local function mint_flags()
  local wake_list = ns .. 'wake'
  local n = redis.call('EXISTS', ns .. 'prio', ns .. 'quotas', wake_list, wake_list, wake_list)
  WAKE_TOKEN, n = n > 2, n % 3
  local quotas = n == 2 or (n == 1 and redis.call('EXISTS', ns .. 'quotas') == 1)
  PRIO[''], QUOTA = n == 2 or (n == 1 and not quotas), quotas and {} or false
end

-- A job with a priority other than 0 is minted in a group: the group enters priority mode.
local function prio_mark(group)
  if not prio_on(group) then
    redis.call('SADD', ns .. 'prio', group)
    PRIO[''], PRIO[group] = true, true
  end
end

-- The due time of a mint's due spec: "" now, "+<ms>" after a delay, "@<epoch ms>".
local function due_at(spec, now)
  if spec == '' then return now end
  local v = tonumber(string.sub(spec, 2))
  if string.sub(spec, 1, 1) == '+' then return now + v end
  return v
end

-- Append a field and its value to a list of HSET arguments.
local function put(h, name, value)
  local n = #h
  h[n + 1] = name
  h[n + 2] = value
end

-- The HSET arguments of a new job from its ARGV fields at b: the fields every job has (its format too), then the
-- optional ones that differ from DEFAULT, due unless it is now, origin, priority and meta when given.
local function job_hash(b, state, now, due, priority)
  local h = {'fn', ARGV[b + 3], 'group', ARGV[b + 6], 'state', state, 'lease', ARGV[b + 9], 'created', now,
    'v', FORMAT}
  for i = 1, #OPTIONAL, 2 do
    local v = ARGV[b + OPTIONAL[i + 1]]
    if v ~= DEFAULT[OPTIONAL[i]] then put(h, OPTIONAL[i], v) end
  end
  if due ~= now then put(h, 'due', due) end
  if ARGV[b + 12] ~= '' then put(h, 'origin', ARGV[b + 12]) end
  if priority ~= 0 then put(h, 'priority', priority) end
  if ARGV[b + 14] ~= '' then put(h, 'meta', ARGV[b + 14]) end
  return h
end

-- Create one job from the JOB_FIELDS ARGV fields at ARGV[b+1..]; if_absent forces keep-if-exists on.
-- A ready job goes to push(group, id, front) (lane_push, or mint's batching); front = priority > 0
-- puts it at the head of its lane (Django tasks' priority; see backends.py). Returns created 0|1,
-- whether the job is ready now, and the quota refusal {group, max} when its group (or the queue) is
-- at its quota (nothing written; _quotas.lua), which refuse = false never makes (counted all the
-- same: a flow's step, a recurrence's run). mint, flow_mint and repeat_mint share it.
local function put_job(b, now, if_absent, push, refuse)
  local id, group = ARGV[b + 1], ARGV[b + 6]
  local key = job_key(id)
  if (if_absent or ARGV[b + 2] == '1') and rec_exists(key) then return 0, false end
  if QUOTA == nil then mint_flags() end
  local mark, refused = nil, nil
  if QUOTA then mark, refused = quota_take(group, refuse) end
  if refused then return 0, false, refused end
  local due = due_at(ARGV[b + 7], now)
  local state = 'ready'
  if due > now then state = 'scheduled' end
  local priority = tonumber(ARGV[b + 13])
  local h = job_hash(b, state, now, due, priority)
  if mark then  -- counted: its end gives the count back (notify: _flow.lua's tell_job, _quota_end.lua)
    put(h, 'quota', mark)
    put(h, 'notify', 'q')
  end
  rec_create(key, unpack(h))
  if priority ~= 0 then prio_mark(group) end  -- its group's ready jobs go through a sorted set from now on (_prio.lua)
  if state == 'ready' then
    push(group, id, priority > 0)
    return 1, true
  end
  schedule(id, due)
  return 1, false
end
