--[[
  _flow: jobs that wait for other jobs — dependencies (after=), chains, batches and their
  callbacks — and ref.wait()'s blocking pop; loaded after _prelude.lua, whose helpers it uses.
  KEYS[1] ns  <prefix>:{<queue>}: (every key is ns .. suffix)
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
  A batch is a flow record (flow:<id>) with its pending members in deps:<id>; each member's end
  counts once, the last settles the batch, and its callbacks are jobs waiting for the batch.
]]
local SETTLED = {completed = true, dead = true, cancelled = true, failed = true}

-- A parent in this queue: a job, or a batch recorded here. Returns state, result JSON, reason,
-- is_batch; nil when neither exists. A batch's result is its summary.
local function parent_state(pid)
  local f = redis.call('HMGET', ns .. 'job:' .. pid, 'state', 'result', 'reason')
  if f[1] then return f[1], f[2] or 'null', f[3] or '', false end
  local b = redis.call('HMGET', ns .. 'flow:' .. pid, 'state', 'summary')
  if b[1] then return b[1], b[2] or 'null', '', true end
  return nil
end

-- Queue a parent's outcome for its child in another queue; the first entry wakes the Pump.
local function relay_out(queue, cid, pid, state, result, reason, batch)
  local seq = redis.call('INCR', ns .. 'relay:seq')
  local entry = cjson.encode({q = queue, c = cid, p = pid, s = state, r = result, w = reason, b = batch})
  if redis.call('RPUSH', ns .. 'relay', seq .. '|' .. entry) == 1 then wake('pumpwake') end
end

-- Put a parent's result (JSON) first among a waiting job's arguments: a chain step, a callback.
local function prepend_arg(id, value)
  local key = ns .. 'job:' .. id
  local args = redis.call('HGET', key, 'args') or '[]'
  if args == '[]' then args = '[' .. value .. ']' else args = '[' .. value .. ',' .. string.sub(args, 2) end
  redis.call('HSET', key, 'args', args)
end

-- A job leaves the waiting set, forgetting the parents it still waited for (cancel, bury, release).
local function flow_unwait(id)
  redis.call('ZREM', ns .. 'waiting', id)
  redis.call('DEL', ns .. 'deps:' .. id)
end

-- Every parent settled: the job is ready, or scheduled while the due time it was given is ahead.
local function release(id, now)
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'group', 'priority', 'due')
  flow_unwait(id)
  local due = tonumber(f[3] or '0')
  if due > now then
    redis.call('HSET', key, 'state', 'scheduled')
    schedule(id, due)
    emit('scheduled', id)
  else
    redis.call('HSET', key, 'state', 'ready', 'due', now)
    lane_push(f[1], id, tonumber(f[2] or '0') > 0)
    wake('wake')
    emit('ready', id)
  end
end

-- End a waiting job without running it: dead (a parent failed) or cancelled (not needed).
local function give_up(id, state, reason, now, notify)
  local key = ns .. 'job:' .. id
  flow_unwait(id)
  if state == 'dead' then
    bury(key, id, now, reason, reason)
    count(now, 'dead', 1)
    emit('dead', id, reason)
  else
    redis.call('HSET', key, 'state', 'cancelled', 'finished', now, 'reason', reason, 'cancelled_from', 'waiting')
    redis.call('ZADD', ns .. 'cancelled', now, id)
    count(now, 'cancelled', 1)
    emit('cancelled', id)
  end
  if notify then flow_finished(id, state, now) end
end

-- One parent of a waiting job settled: counted once (a repeated relay changes nothing), then the
-- job runs, waits on, or ends. A failed parent kills a job that needs its parents completed
-- (when = "completed"), at once, naming the first failure upstream: "<kind> <id> <state>".
local function settle(id, pid, pstate, presult, preason, now)
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'when', 'kind', 'pass', 'notify', 'failed_parent')
  if f[1] ~= 'waiting' or redis.call('SREM', ns .. 'deps:' .. id, pid) == 0 then return end
  local kind, when, failed = f[3] or 'parent', f[2] or 'completed', f[6]
  if pstate ~= 'completed' then
    if when == 'completed' then
      local reason = kind .. ' ' .. pid .. ' ' .. pstate
      if string.sub(preason, 1, #kind + 1) == kind .. ' ' then reason = preason end
      return give_up(id, 'dead', reason, now, f[5])
    end
    if not failed then
      failed = pid
      redis.call('HSET', key, 'failed_parent', pid)
    end
  end
  if f[4] == '1' then prepend_arg(id, presult) end
  if redis.call('EXISTS', ns .. 'deps:' .. id) == 1 then return end
  if when == 'failed' and not failed then
    return give_up(id, 'cancelled', kind .. ' ' .. pid .. ' completed: nothing failed', now, f[5])
  end
  release(id, now)
end

-- Tell the children of a settled job or batch: settled here, or relayed to their queue.
local function tell_children(id, state, result, reason, now)
  local kids = redis.call('SMEMBERS', ns .. 'children:' .. id)
  if #kids == 0 then return end
  redis.call('DEL', ns .. 'children:' .. id)
  for _, raw in ipairs(kids) do
    local ref = cjson.decode(raw)
    if ref[1] == '' then
      settle(ref[2], id, state, result, reason, now)
    else
      relay_out(ref[1], ref[2], id, state, result, reason, false)
    end
  end
end

-- Wake ref.wait() callers: one token, kept ttl ms (each waiter puts it back for the next).
local function tell_waiters(id, state, ttl)
  redis.call('RPUSH', ns .. 'finished:' .. id, state)
  redis.call('PEXPIRE', ns .. 'finished:' .. id, ttl)
end

-- A member of a batch recorded here settled: counted once; the last one settles the batch, whose
-- callbacks (jobs waiting for it) then get its summary {id, total, completed, dead, cancelled}.
local function batch_settle(bid, mid, mstate, now)
  if redis.call('SREM', ns .. 'deps:' .. bid, mid) == 0 then return end
  local bkey = ns .. 'flow:' .. bid
  if mstate ~= 'completed' and mstate ~= 'cancelled' then mstate = 'dead' end
  redis.call('HINCRBY', bkey, mstate, 1)
  if redis.call('EXISTS', ns .. 'deps:' .. bid) == 1 then return end
  local f = redis.call('HMGET', bkey, 'total', 'completed', 'dead', 'cancelled', 'ttl', 'waited')
  local dead, cancelled = tonumber(f[3] or '0'), tonumber(f[4] or '0')
  local summary = cjson.encode({id = bid, total = tonumber(f[1]), completed = tonumber(f[2] or '0'),
    dead = dead, cancelled = cancelled})
  local state = 'completed'
  if dead + cancelled > 0 then state = 'failed' end
  redis.call('HSET', bkey, 'state', state, 'finished', now, 'summary', summary)
  redis.call('PEXPIRE', bkey, f[5])
  redis.call('PEXPIRE', ns .. 'members:' .. bid, f[5])
  emit('batch', bid, state)
  if f[6] then tell_waiters(bid, state, f[6]) end
  tell_children(bid, state, summary, '', now)
end

-- What a job that reached a terminal state tells: its waiters, its children, its batch.
local function tell_job(id, state, now)
  local f = redis.call('HMGET', ns .. 'job:' .. id, 'waited', 'batch', 'flow', 'result', 'reason')
  if f[1] then tell_waiters(id, state, f[1]) end
  tell_children(id, state, f[4] or 'null', f[5] or '', now)
  if f[2] == 'L' then
    batch_settle(cjson.decode(f[3])[2], id, state, now)
  elseif f[2] == 'R' then
    local ref = cjson.decode(f[3])
    relay_out(ref[1], ref[2], id, state, 'null', '', true)
  end
end

-- The terminal hook (declared in _events.lua): a job with notify=1 reached completed, dead or
-- cancelled. A worklist, so a chain ending in one queue never recurses as deep as it is long.
local told, telling = {}, false
flow_finished = function(id, state, now)
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
