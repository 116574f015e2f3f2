--[[
  _flow: jobs that wait for other jobs — dependencies (after=), chains, batches and their
  callbacks — and ref.wait()'s blocking pop.
  Suffixes used here: job:<id>, deps:<id>, children:<id>, flow:<id>, members:<id>, finished:<id>,
                      waiting, relay, relay:seq, dead, cancelled, scheduled, lane:<group>, wake, pumpwake
  A job "waiting" sits in the waiting set with its pending parent ids in deps:<id>. A parent
  knows its waiting children: children:<parent id> holds JSON [queue, child id], queue "" when
  the child is in this queue. A job with anything to tell when it ends carries notify=1 (one
  field finish already reads), so a job without flows pays nothing.
  When a parent settles (completed, dead, cancelled; a batch: completed or failed), each child
  in this queue is settled in the same script; a child in another queue is another slot, so the
  outcome goes to this queue's relay list and the Pump forwards it (flow_out, flow_relay).
  Settling is idempotent (SREM from deps:<child>), so a repeated forward changes nothing.
  A job a quota counts carries notify too ("q" while nothing else waits on it, 1 once a flow does):
  its end gives the count back here (flow_finished, tell_job).
  A batch is a flow record (flow:<id>) with its pending members in deps:<id>; each member's end
  counts once, the last settles the batch, and its callbacks are jobs waiting for the batch.
  A chord is a batch whose callback gets its members' results, in member order (_chord.lua).
  A failed end keeps the list of the children it told on the job hash (or the batch's record) as
  "fallen", and a child it killed keeps died_of (that parent) and held_by (the parents it still
  waited for), so that a retry of the parent resumes the flow (_revive.lua). A retry makes a new
  generation (gen) of the job or batch; outcomes carry it, and a child (or a batch) ignores one
  older than the generation that reopened it (rg:<parent id>), as a relay may repeat an entry.
]]
--- @include "_chord"
--- @include "_bury"
--- @include "_checks"
--- @include "_events"
--- @include "_lanes"
--- @include "_quota_end"
--- @include "_record"
--- @include "_schedule"
--- @include "_stats"
--- @include "_wake"
-- A job reached a terminal state: flow_finished, defined last, tells its waiters, children and batch;
-- a child that gives up (give_up) reaches a terminal state in turn.
local flow_finished

-- Queue a parent's outcome (of generation gen) for its child in another queue; the first entry wakes the Pump.
local function relay_out(queue, cid, pid, state, result, reason, batch, gen)
  local seq = redis.call('INCR', ns .. 'relay:seq')
  local entry = cjson.encode({q = queue, c = cid, p = pid, s = state, r = result, w = reason, b = batch, g = gen})
  if redis.call('RPUSH', ns .. 'relay', seq .. '|' .. entry) == 1 then wake('pumpwake') end
end

-- Put a parent's result (JSON) first among a waiting job's arguments: a chain step, a callback.
local function prepend_arg(id, value)
  local key = job_key(id)
  local args = rec_get(key, 'args') or '[]'
  if args == '[]' then args = '[' .. value .. ']' else args = '[' .. value .. ',' .. string.sub(args, 2) end
  rec_set(key, 'args', args)
end

-- A job leaves the waiting set, forgetting the parents it still waited for (cancel, bury, release).
local function flow_unwait(id)
  redis.call('ZREM', ns .. 'waiting', id)
  redis.call('DEL', ns .. 'deps:' .. id)
end

-- Every parent settled: the job is ready, or scheduled while the due time it was given is ahead.
local function release(id, now)
  local key = job_key(id)
  local f = rec_fields(key, 'group', 'priority', 'due')
  flow_unwait(id)
  local due = tonumber(f[3] or '0')
  if due > now then
    rec_set(key, 'state', 'scheduled')
    schedule(id, due)
    emit('scheduled', id)
  else
    rec_set(key, 'state', 'ready', 'due', now)
    lane_push(f[1], id, tonumber(f[2] or '0') > 0)
    wake('wake')
    emit('ready', id)
  end
end

-- End a waiting job without running it: dead (parent pid failed) or cancelled (not needed). A dead one
-- keeps what a retry of pid needs to have it wait again: died_of, and held_by (the parents still pending).
local function give_up(id, state, reason, now, notify, pid)
  local key = job_key(id)
  if pid then
    local left = redis.call('SMEMBERS', ns .. 'deps:' .. id)
    if #left > 0 then rec_set(key, 'held_by', cjson.encode(left)) end
    rec_set(key, 'died_of', pid)
  end
  flow_unwait(id)
  if state == 'dead' then
    bury(key, id, now, reason, reason)
    count(now, 'dead', 1)
    emit('dead', id, reason)
  else
    rec_set(key, 'state', 'cancelled', 'finished', now, 'reason', reason, 'cancelled_from', 'waiting')
    redis.call('ZADD', ns .. 'cancelled', now, id)
    count(now, 'cancelled', 1)
    emit('cancelled', id)
  end
  if notify then flow_finished(id, state, now, notify) end
end

-- A child a durable job spawned (ctx.spawn, marked "spawns") ended: counted whatever the job's state (it
-- may still run); the last one releases the job when it waits for its children (no signal named in
-- waits). The job reads its children's outcomes itself (ctx.wait_children): nothing is passed here.
local function spawn_settled(id, pid, state, now)
  if redis.call('SREM', ns .. 'deps:' .. id, pid) == 0 or state ~= 'waiting'
      or redis.call('EXISTS', ns .. 'deps:' .. id) == 1 then return end
  if not rec_get(job_key(id), 'waits') then release(id, now) end
end

-- A parent of a job that died because of another parent settled: a completed one leaves held_by (its
-- result passed as usual), so a retry of the other has the job wait only for what is still pending.
local function settle_fallen(id, key, pid, pstate, presult, pass)
  local held = rec_get(key, 'held_by')
  if pstate ~= 'completed' or not held then return end
  local left, found = {}, false
  for _, p in ipairs(cjson.decode(held)) do
    if p == pid and not found then found = true else left[#left + 1] = p end
  end
  if not found then return end
  if #left == 0 then rec_unset(key, 'held_by') else rec_set(key, 'held_by', cjson.encode(left)) end
  if pass == '1' then prepend_arg(id, presult) end
end

-- One parent of a waiting job settled: counted once (a repeated relay changes nothing), then the
-- job runs, waits on, or ends. A failed parent kills a job that needs its parents completed
-- (when = "completed"), at once, naming the first failure upstream: "<kind> <id> <state>".
-- gen: the parent's generation; an outcome from before the retry that reopened the job is ignored.
local function settle(id, pid, pstate, presult, preason, now, gen)
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'when', 'kind', 'pass', 'notify', 'failed_parent', 'died_of',
    'rg:' .. pid, 'spawns')
  if f.err then  -- the key holds no hash: it waits no more, dead as corrupt (_checks.lua)
    flow_unwait(id)
    return unhashed(key, id, f, now)
  end
  if f[9] then return spawn_settled(id, pid, f[1], now) end
  if f[8] and tonumber(f[8]) > (gen or 0) then return end
  if f[1] == 'dead' and f[7] then return settle_fallen(id, key, pid, pstate, presult, f[4]) end
  if f[1] ~= 'waiting' or redis.call('SREM', ns .. 'deps:' .. id, pid) == 0 then return end
  local kind, when, failed = f[3] or 'parent', f[2] or 'completed', f[6]
  if pstate ~= 'completed' then
    if when == 'completed' then
      local reason = kind .. ' ' .. pid .. ' ' .. pstate
      if string.sub(preason, 1, #kind + 1) == kind .. ' ' then reason = preason end
      return give_up(id, 'dead', reason, now, f[5], pid)
    end
    if not failed then
      failed = pid
      rec_set(key, 'failed_parent', pid)
    end
  end
  if f[4] == '1' then prepend_arg(id, presult) end
  if redis.call('EXISTS', ns .. 'deps:' .. id) == 1 then return end
  if when == 'failed' and not failed then
    return give_up(id, 'cancelled', kind .. ' ' .. pid .. ' completed: nothing failed', now, f[5])
  end
  release(id, now)
end

-- Tell the children of a settled job or batch (its hash or record: holder; its generation: gen): settled
-- here, or relayed to their queue. A failed end keeps their list on holder, for a retry (_revive.lua).
-- record: holder is the job's record (else a batch's flow:<id> hash), as _revive.lua's reopen_children.
local function tell_children(id, state, result, reason, now, holder, record, gen)
  local kids = redis.call('SMEMBERS', ns .. 'children:' .. id)
  if #kids == 0 then return end
  redis.call('DEL', ns .. 'children:' .. id)
  if state ~= 'completed' then
    local fallen = cjson.encode(kids)
    if record then rec_set(holder, 'fallen', fallen) else redis.call('HSET', holder, 'fallen', fallen) end
  end
  for _, raw in ipairs(kids) do
    local ref = cjson.decode(raw)
    if ref[1] == '' then
      settle(ref[2], id, state, result, reason, now, gen)
    else
      relay_out(ref[1], ref[2], id, state, result, reason, false, gen)
    end
  end
end

-- Wake ref.wait() callers: one token, kept ttl ms (each waiter puts it back for the next).
local function tell_waiters(id, state, ttl)
  redis.call('RPUSH', ns .. 'finished:' .. id, state)
  redis.call('PEXPIRE', ns .. 'finished:' .. id, ttl)
end

-- Every member of a batch recorded here has ended: it settles, and its callbacks (jobs waiting for it)
-- get its summary {id, total, completed, dead, cancelled} (a chord's callback: the results, _chord.lua).
local function batch_done(bid, kind, now)
  local bkey = ns .. 'flow:' .. bid
  local f = redis.call('HMGET', bkey, 'total', 'completed', 'dead', 'cancelled', 'ttl', 'waited', 'gen')
  local dead, cancelled = tonumber(f[3] or '0'), tonumber(f[4] or '0')
  local summary = cjson.encode({id = bid, total = tonumber(f[1]), completed = tonumber(f[2] or '0'),
    dead = dead, cancelled = cancelled})
  local state, handed, reason = 'completed', summary, ''
  if dead + cancelled > 0 then state = 'failed' end
  if kind == 'chord' then state, handed, reason = chord_told(bid, state, dead, cancelled, f[5]) end
  redis.call('HSET', bkey, 'state', state, 'finished', now, 'summary', summary)
  redis.call('PEXPIRE', bkey, f[5])
  redis.call('PEXPIRE', ns .. 'members:' .. bid, f[5])
  emit('batch', bid, state)
  if f[6] then tell_waiters(bid, state, f[6]) end
  tell_children(bid, state, handed, reason, now, bkey, false, tonumber(f[7] or '0'))
end

-- A member of a batch recorded here settled (its result, its generation): counted once; the last one
-- settles the batch. An end from before a retry reopened the member (rg:<member id>) is ignored.
local function batch_settle(bid, mid, mstate, now, result, gen)
  local bkey = ns .. 'flow:' .. bid
  local b = redis.call('HMGET', bkey, 'kind', 'rg:' .. mid)
  if b[2] and tonumber(b[2]) > (gen or 0) then return end
  if redis.call('SREM', ns .. 'deps:' .. bid, mid) == 0 then return end
  if mstate ~= 'completed' and mstate ~= 'cancelled' then mstate = 'dead' end
  redis.call('HINCRBY', bkey, mstate, 1)
  if b[1] == 'chord' then chord_keep(bid, mid, mstate, result) end
  if redis.call('EXISTS', ns .. 'deps:' .. bid) == 1 then return end
  batch_done(bid, b[1], now)
end

-- What a job that reached a terminal state tells: its waiters, its children, its batch; and a quota that
-- counts it gets the count back (_quota_end.lua: a counted job carries notify for this).
local function tell_job(id, state, now)
  local key = job_key(id)
  local f = rec_fields(key, 'waited', 'batch', 'flow', 'result', 'reason', 'gen', 'quota')
  local gen = tonumber(f[6] or '0')
  if f[7] then quota_end(key, f[7]) end
  if f[1] then tell_waiters(id, state, f[1]) end
  tell_children(id, state, f[4] or 'null', f[5] or '', now, key, true, gen)
  if f[2] == 'L' then
    batch_settle(cjson.decode(f[3])[2], id, state, now, f[4] or 'null', gen)
  elseif f[2] then  -- R, or RC: a chord's member, whose result the chord keeps (_chord.lua)
    local ref = cjson.decode(f[3])
    relay_out(ref[1], ref[2], id, state, f[2] == 'RC' and f[4] or 'null', '', true, gen)
  end
end

-- The terminal hook (declared at the top of this file): a job with notify reached completed, dead or
-- cancelled. A worklist, so a chain ending in one queue never recurses as deep as it is long. notify
-- "q": a quota counts the job and nothing else waits on it (_quotas.lua): the count goes back, no more.
local told, telling = {}, false
flow_finished = function(id, state, now, notify)
  if notify == 'q' then
    local key = job_key(id)
    local mark = rec_get(key, 'quota')
    if mark then quota_end(key, mark) end
    return
  end
  told[#told + 1] = {id, state}
  if telling then return end
  telling = true
  local i = 1
  while i <= #told do
    tell_job(told[i][1], told[i][2], now)
    i = i + 1
  end
  told, telling = {}, false
end
