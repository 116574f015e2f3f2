--[[
  finish: settle a batch of claimed jobs in one round trip, each item on its own.
  Only the holder of the current token of an active job may finish it; anything else
  answers stale or missing and changes nothing.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of items
  ARGV[2] ttl       ms a completed job is kept
  ARGV[3] keep      at most this many completed jobs are kept
  then 5 fields per item:
          id, token,
          outcome     "completed" | "failed" (retry while attempts remain) | "dead" (no retry) |
                      "discarded" (dead, no retry, reason "discarded": the job raised emq.Discard) |
                      "ratelimited" (emq.RateLimited: ready again, attempt given back, group held retry_ms) |
                      "corrupt" (dead, reason "corrupt": the worker could not decode the job;
                      value says what was wrong, e.g. "args is not JSON")
          value       result JSON when completed (a null result is not stored: readers take it as null);
                      error text (first line, then traceback) otherwise
          retry_ms    delay before the retry, chosen by the caller's backoff (0 = ready now)
  An item that did not complete and whose job cannot be settled as asked (the retry rule's
  max_attempts or stalled not numbers, group missing: a completion reads none of them) is checked
  before any write to it and ends dead as "corrupt: <what>" (_checks.lua); a job whose hash is gone
  releases the count its lease held in its group (held).
  Derived: job:<id>, leases, held, done, dead, scheduled, lane:<group>, ring, lanes, caps, active,
           paused:groups, wake, pumpwake, stats, minute:<n>, and what a flow's end touches (_flow.lua)
  Returns: {state_1, ..., state_n}   the state the script decided for each item:
           "completed" | "ready" (retry now) | "scheduled" (retry later) | "dead",
           or "stale" (token not current) | "missing" (no such job), which changed nothing
]]
local n, ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out, freed = {}, {}
local done, retried, dead, stale, requeued = {}, 0, 0, 0, 0

-- What makes an item unusable (checked before any write to it), or nil. A worker that could not
-- decode a claimed job sends outcome "corrupt" with what was wrong as its value.
local function finish_fault(f, outcome, value)
  if outcome == 'corrupt' then return value end
  if not tonumber(f[3]) then return 'max_attempts is not a number' end
  if not f[4] then return 'group missing' end
  if f[5] and not tonumber(f[5]) then return 'stalled is not a number' end
  return nil
end

-- Record a failed attempt; returns the job's new state (the retry rule lives here and only here).
local function fail(key, id, f, outcome, text, retry_ms)
  local attempts, max = tonumber(f[2]), tonumber(f[3])
  note_error(key, attempts, now, first_line(text))
  if outcome == 'failed' and attempts - tonumber(f[5] or '0') < max then
    retried = retried + 1
    if retry_ms <= 0 then
      redis.call('HSET', key, 'state', 'ready', 'error', text, 'due', now)
      lane_push(f[4], id, false)
      requeued = requeued + 1
      emit('retried', id, 'ready')
      return 'ready'
    end
    redis.call('HSET', key, 'state', 'scheduled', 'error', text, 'due', now + retry_ms)
    schedule(id, now + retry_ms)
    emit('retried', id, 'scheduled')
    return 'scheduled'
  end
  local reason = outcome == 'discarded' and 'discarded' or 'failed'
  bury(key, id, now, text, reason)  -- frees its unique key too
  dead = dead + 1
  emit('dead', id, reason)
  if f[6] then flow_finished(id, 'dead', now) end
  return 'dead'
end

-- A failure, a discard, a rate limit or a corrupt item: the retry rule's fields are read for it alone
-- (a completion needs none of them, so the usual item reads four fields, not seven). f becomes the
-- layout fail and rate_limited take: state, attempts, max_attempts, group, stalled, notify, unique.
local function settle_failure(key, id, f, outcome, value, retry_ms)
  local r = redis.call('HMGET', key, 'max_attempts', 'group', 'stalled')
  f = {f[1], f[2], r[1] or DEFAULT.max_attempts, r[2], r[3], f[3], f[4]}  -- left out at its default by the mint
  local fault = finish_fault(f, outcome, value)
  if fault then
    quarantine(key, id, now, fault)
    return 'dead'
  end
  if outcome == 'ratelimited' then return rate_limited(key, id, f, retry_ms, now) end  -- emq.RateLimited
  return fail(key, id, f, outcome, value, retry_ms)
end

for i = 0, n - 1 do
  local b = 3 + i * 5
  local id, token, outcome, value = ARGV[b + 1], ARGV[b + 2], ARGV[b + 3], ARGV[b + 4]
  local key = ns .. 'job:' .. id
  local f = redis.call('HMGET', key, 'state', 'attempts', 'notify', 'unique')
  if not f[1] then
    lease_gone(id)
    out[#out + 1] = 'missing'
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = 'stale'
    stale = stale + 1
  elseif outcome == 'completed' then
    freed[#freed + 1] = id
    -- A null result (a job that returns None: most) is left out; every reader takes it as null.
    if value == 'null' then
      redis.call('HSET', key, 'state', 'completed', 'finished', now)
    else
      redis.call('HSET', key, 'state', 'completed', 'result', value, 'finished', now)
    end
    done[#done + 1] = now
    done[#done + 1] = id
    out[#out + 1] = 'completed'
    emit('completed', id)
    if f[3] then flow_finished(id, 'completed', now) end
    if f[4] then unique_free(id, f[4]) end
  else
    freed[#freed + 1] = id
    out[#out + 1] = settle_failure(key, id, f, outcome, value, tonumber(ARGV[b + 5]))
  end
end

if #freed > 0 then
  redis.call('ZREM', ns .. 'leases', unpack(freed))
  held_release(freed)
end
if #done > 0 then
  redis.call('ZADD', ns .. 'done', unpack(done))
  trim('done', now, ttl, keep, #done)
end
count(now, 'completed', #done / 2)
count(now, 'failed', retried + dead)
count(now, 'retried', retried)
count(now, 'dead', dead)
count(now, 'stale', stale)
-- A retry due now is visible work like a mint: a parked worker must hear of it.
if requeued > 0 then wake('wake') end
flush_events()
return out
