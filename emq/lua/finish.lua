--[[
  finish: settle a batch of claimed jobs in one round trip, each item on its own.
  Only the holder of the current token of an active job may finish it; anything else
  answers stale or missing and changes nothing.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of items
  ARGV[2] ttl       ms a completed job is kept
  ARGV[3] keep      at most this many completed jobs are kept
  then per item either 2 fields, for a job that completed with a null result (most items):
          id, token
  or 5, for any other outcome, told from the 2-field form by its second field (not a number):
          id,
          outcome     "completed" | "failed" (retry while attempts remain) | "dead" (no retry) |
                      "discarded" (dead, no retry, reason "discarded": the job raised emq.Discard) |
                      "spared" (back without spending an attempt: ready now, or scheduled retry_ms from now) |
                      "ratelimited" (emq.RateLimited: spared to its lane's head, its group held retry_ms) |
                      "unknown" (the worker does not know the job's name: spared and held off, or dead
                      with reason "unknown job <name>" once the grace has passed; see unknown_hold) |
                      "suspended" (a durable job slept or waits, spared as _suspend.lua says: scheduled,
                      waiting or ready) |
                      "corrupt" (dead, reason "corrupt": the worker could not decode the job;
                      value says what was wrong, e.g. "args is not JSON") |
                      "undecryptable" (dead, no retry, reason "cannot decrypt": no key of the worker
                      opens the encrypted job; value says why)
          token,
          value       result JSON when completed (a null result is not stored: readers take it as null);
                      "<grace ms>,<cap ms>|<error text>" when unknown; unused when spared;
                      "<kind>|<arg>|<name>" when suspended (_suspend.lua);
                      error text (first line, then traceback) otherwise
          retry_ms    delay before the retry, chosen by the caller's backoff (0 = ready now); when unknown,
                      the first hold's delay
  then, once in a while (about a second), the statistics per job name the worker tallied since it last sent
  them (_jobstats.lua's stat_apply): per name, name, k, k (slot, value) pairs; closed by "jstats:<elements>"
  A spared job's attempts counter (its fencing token, raised by its claim) stays as it is, so a token is
  never handed out twice; its spared counter goes up instead, and the retry rule and Job.attempts
  subtract it (attempts spent = attempts - spared).
  An item that did not complete and whose job cannot be settled as asked (the retry rule's
  max_attempts, stalled or spared not numbers, group missing, an unknown item's value malformed: a
  completion reads none of them), or whose key holds no hash, is checked before any write to it and
  ends dead as "corrupt: <what>" (_checks.lua); a job whose hash is gone releases the count its lease
  held in its group (held).
  Derived: job:<id>, leases, held, done, dead, queued, scheduled, lane:<group>, ring, lanes, caps, active,
           paused:groups, wake, pumpwake, stats, minute:<n>, jstat:m<minute>:<name>, jstat:names, unknown,
           rhold, rout, pumplast,
           and what a flow's end touches (_flow.lua)
  Returns: {state_1, ..., state_n}   the state the script decided for each item:
           "completed" | "ready" (retry now) | "scheduled" (retry later) | "dead" | "waiting" (suspended),
           or "stale" (token not current) | "missing" (no such job), which changed nothing;
           or n alone when every item completed (the usual batch: one reply item, not n)
]]
--- @include "_bury"
--- @include "_checks"
--- @include "_clock"
--- @include "_defaults"
--- @include "_errors"
--- @include "_events"
--- @include "_flow"
--- @include "_held"
--- @include "_holds"
--- @include "_jobstats"
--- @include "_lanes"
--- @include "_packed"
--- @include "_pending"
--- @include "_record"
--- @include "_schedule"
--- @include "_stats"
--- @include "_suspend"
--- @include "_trim"
--- @include "_unknown"
--- @include "_wake"
local n, ttl, keep = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = now_ms()
local out, freed = {}, {}
local done, retried, dead, stale, requeued = {}, 0, 0, 0, 0
local DEAD_REASON = {discarded = 'discarded', undecryptable = 'cannot decrypt'}  -- else 'failed'

-- What makes an item unusable (checked before any write to it), or nil. A worker that could not
-- decode a claimed job sends outcome "corrupt" with what was wrong as its value.
local function finish_fault(f, outcome, value)
  if outcome == 'corrupt' then return value end
  if not tonumber(f[3]) then return 'max_attempts is not a number' end
  if not f[4] then return 'group missing' end
  if f[5] and not tonumber(f[5]) then return 'stalled is not a number' end
  if f[8] and not tonumber(f[8]) then return 'spared is not a number' end
  if outcome == 'unknown' and not string.match(value, '^%d+,%d+|') then return 'unknown item without its grace' end
  if outcome == 'unknown' and not f[10] then return 'fn missing' end
  if outcome == 'suspended' and not string.match(value, '^[zwc]|[^|]*|') then return 'suspension malformed' end
  return nil
end

-- Record a failed attempt; returns the job's new state (the retry rule lives here and only here).
local function fail(key, id, f, outcome, text, retry_ms)
  local spent, max = tonumber(f[2]) - tonumber(f[8] or '0'), tonumber(f[3])
  note_error(key, spent, now, first_line(text))
  if outcome == 'failed' and spent - tonumber(f[5] or '0') < max then
    retried = retried + 1
    if retry_ms <= 0 then
      rec_set(key, 'state', 'ready', 'error', text, 'due', now)
      lane_push(f[4], id, false)
      requeued = requeued + 1
      emit('retried', id, 'ready')
      return 'ready'
    end
    rec_set(key, 'state', 'scheduled', 'error', text, 'due', now + retry_ms)
    schedule(id, now + retry_ms)
    emit('retried', id, 'scheduled')
    return 'scheduled'
  end
  local reason = DEAD_REASON[outcome] or 'failed'
  bury(key, id, now, text, reason)  -- frees its unique key too
  dead = dead + 1
  emit('dead', id, reason)
  if f[6] then flow_finished(id, 'dead', now, f[6]) end
  return 'dead'
end

-- Give a leased job back without spending its attempt: ready at its lane's head (retry_ms <= 0), else
-- scheduled retry_ms from now. Its claim raised attempts, the fencing token, and that stays: the next
-- claim hands out a token never seen before. spared counts the claims given back.
local function spare(key, id, f, retry_ms)
  local spared = tonumber(f[8] or '0') + 1
  if retry_ms <= 0 then
    rec_set(key, 'state', 'ready', 'due', now, 'spared', spared)
    lane_push(f[4], id, true)
    emit('ready', id)
    return 'ready'
  end
  rec_set(key, 'state', 'scheduled', 'due', now + retry_ms, 'spared', spared)
  schedule(id, now + retry_ms)
  emit('scheduled', id)
  return 'scheduled'
end

-- A worker did not know the job's name (in a rolling deploy: new code minted it, an old worker claimed
-- it). It is spared and held off about as long as it has been unknown so far (retry_ms at first, at most
-- cap ms: 1, 1, 2, 4, 8 ... s by default), until grace ms have passed since a worker first did not know it
-- (its unknown field, server ms; counted in the unknown hash meanwhile: _unknown.lua's unknown_mark). Then it is
-- dead as "unknown job <name>".
local function unknown_hold(key, id, f, value, retry_ms)
  local grace, cap, text = string.match(value, '^(%d+),(%d+)|(.*)$')
  local since = tonumber(f[9] or '') or now
  if now - since < tonumber(grace) then
    if not f[9] then
      unknown_mark(key, f[10], now, true)
      rec_set(key, 'error', text)
    end
    return spare(key, id, f, math.min(tonumber(cap), math.max(retry_ms, now - since)))
  end
  if f[9] then unknown_mark(key, f[10], now, false) end
  local reason = 'unknown job ' .. f[10]
  rec_set(key, 'spared', tonumber(f[8] or '0') + 1)  -- it never ran: no attempt spent, none in errors
  bury(key, id, now, text, reason)
  dead = dead + 1
  emit('dead', id, reason)
  if f[6] then flow_finished(id, 'dead', now, f[6]) end
  return 'dead'
end

-- A failure, a discard, a hold or a corrupt item: the retry rule's fields are read for it alone (a completion
-- needs none of them, so the usual item reads four fields, not ten). f becomes the layout fail, spare and
-- unknown_hold take: state, attempts, max_attempts, group, stalled, notify, unique, spared, unknown, fn.
local function settle_failure(key, id, f, outcome, value, retry_ms)
  local r = rec_fields(key, 'max_attempts', 'group', 'stalled', 'spared', 'unknown', 'fn', 'v')
  -- max_attempts left out by the mint holds its format's default
  f = {f[1], f[2], r[1] or defaults_of(r[7]).max_attempts, r[2], r[3], f[3], f[4], r[4], r[5], r[6]}
  local fault = finish_fault(f, outcome, value)
  if f[9] and (fault or outcome ~= 'unknown') then  -- a job held for its name met a worker that knows it
    unknown_mark(key, f[10], now, false)
    f[9] = nil
  end
  if fault then
    quarantine(key, id, now, fault)
    return 'dead'
  end
  if outcome == 'unknown' then return unknown_hold(key, id, f, value, retry_ms) end
  if outcome == 'ratelimited' then  -- emq.RateLimited: its whole group held, the job first in its lane
    rate_hold(f[4], now + math.max(retry_ms, 1))
    return spare(key, id, f, 0)
  end
  if outcome == 'spared' or outcome == 'suspended' then
    local state = outcome == 'spared' and spare(key, id, f, retry_ms) or
      suspend(key, id, f[4], tonumber(f[8] or '0') + 1, value, now)  -- _suspend.lua
    if state == 'ready' then requeued = requeued + 1 end
    return state
  end
  return fail(key, id, f, outcome, value, retry_ms)
end

-- How many fields the item at ARGV[at + 1] has: 2 (id, token) when its second is a number, else 5 (an outcome's
-- name second). The read-ahead and the loop below both go by it. Known by its text once a call (WIDTH): a batch's
-- tokens and outcomes are a few texts, and tonumber is a strtod.
local WIDTH = {}
local function width(at)
  local second = ARGV[at + 2]
  local w = WIDTH[second]
  if not w then
    w = tonumber(second) and 2 or 5
    WIDTH[second] = w
  end
  return w
end

if RECORD_FORMAT == '2' then  -- the batch's packed records in one MGET (_record.lua's rec_prefetch)
  local ids, at = {}, 3
  for i = 1, n do
    ids[i] = ARGV[at + 1]
    at = at + width(at)
  end
  rec_prefetch(ids, n)
end
-- A packed record read ahead, completed by its head alone (_packed.lua's rec_complete); false: the whole path.
local function complete_packed(id, key, s, token, value)
  local record = rec_complete(s, token, value, now)
  if not record then return false end
  rec_put(key, record)
  freed[#freed + 1] = id
  done[#done + 1] = now
  done[#done + 1] = id
  out[#out + 1] = 'completed'
  if EVENTS_MAX > 0 then emit('completed', id) end  -- the test inline: a Lua call a job saved
  return true
end

local after = 3  -- ARGV index before the next item (items are 2 or 5 fields long)
for _ = 1, n do
  local b = after
  local id, token, outcome, value = ARGV[b + 1], ARGV[b + 2], 'completed', 'null'
  if width(b) == 2 then
    after = b + 2
  else  -- id, outcome, token, value, retry_ms (ARGV[b + 5])
    outcome, token, value, after = token, ARGV[b + 3], ARGV[b + 4], b + 5
  end
  local key = job_key(id)
  local s = outcome == 'completed' and rec_fetched(key)
  -- A pcall: a key with no hash is quarantined (_checks.lua's unhashed). A job a quota counts carries
  -- notify: its end gives the count back through flow_finished (_flow.lua), no field more read here.
  local f = not (s and complete_packed(id, key, s, token, value))
    and rec_try_fields(key, 'state', 'attempts', 'notify', 'unique', 'unknown')
  if not f then  -- completed by its packed head
  elseif f.err then
    freed[#freed + 1] = id
    unhashed(key, id, f, now)
    out[#out + 1] = 'dead'
  elseif not f[1] then
    leases_end({id})  -- its hash is gone
    out[#out + 1] = 'missing'
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = 'stale'
    stale = stale + 1
  elseif outcome == 'completed' then
    freed[#freed + 1] = id
    -- A null result (a job that returns None: most) is left out; every reader takes it as null.
    if value == 'null' then
      rec_set(key, 'state', 'completed', 'finished', now)
    else
      rec_set(key, 'state', 'completed', 'result', value, 'finished', now)
    end
    done[#done + 1] = now
    done[#done + 1] = id
    out[#out + 1] = 'completed'
    emit('completed', id)
    if f[3] then flow_finished(id, 'completed', now, f[3]) end
    if f[4] then unique_free(id, f[4]) end
    -- A job held for its unknown name leaves the count (its mark is read with the job: no call of its own).
    if f[5] then unknown_mark(key, rec_get(key, 'fn'), now, false) end
  else
    freed[#freed + 1] = id
    out[#out + 1] = settle_failure(key, id, f, outcome, value, tonumber(ARGV[b + 5]))
  end
end

rec_flush()  -- the packed records settled, in one MSET (_record.lua)
leases_end(freed)  -- _held.lua
if #done > 0 then
  redis.call('ZADD', ns .. 'done', unpack(done))
  trim('done', now, ttl, keep, #done)
end
count(now, 'completed', #done / 2)
count(now, 'failed', retried + dead)
count(now, 'retried', retried)
count(now, 'dead', dead)
count(now, 'stale', stale)
stat_apply(now)  -- the worker's statistics per job name, when this call carries them (_jobstats.lua)
-- A retry due now is visible work like a mint: a parked worker must hear of it.
if requeued > 0 then wake('wake') end
flush_events()
if n > 0 and #done == 2 * n then return n end
return out
