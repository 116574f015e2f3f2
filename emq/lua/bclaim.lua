--[[
  bclaim: lease up to ARGV[1] ready jobs in one round trip, rotating the ring of lanes. Each claim takes the lane at
  the ring's head and rotates it to the tail, so groups share the queue fairly even inside one batch; a lane alone on
  the ring is popped in one LPOP. The rotation is not made one LMOVE a job: a turn reads the ring's head a chunk at a
  time (LRANGE), with the chunk's caps and rate limits (one HMGET / ZMSCORE each), and writes the turn back once
  (LTRIM the visited groups, RPUSH those that stay). A lane's pop asks for one id more than it takes, so a lane left
  empty is known at once (no EXISTS); the extra id is the group's next turn or goes back to the lane's head. A lane
  found empty (its last job claimed, or a cancel emptied it) or with no room left under its cap or rate limit leaves
  the ring as the turn is written (_ring.lua: no scan of the ring); the groups that left the ring and the lane set
  leave ring:in and lanes in one SREM each. A job alone in its lane as a list costs one command more than one of a
  busy lane (its LPOP); as a solo (a batch mint's lone job) it costs none: its chunk's solos (_solo.lua) are one HMGET
  and one HDEL. Only capped groups count their leases (held, active: one HMGET and one HSET a batch); an uncapped
  group's count would decide nothing. A paused queue answers nothing (after the idle check: one LRANGE of the ring's
  head, the first turn's chunk; one EXISTS tells a queue with no pause, cap, rate limit, hold or solo, and whether a
  token waits in wake for the baton); paused groups are off the ring already.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] max_jobs  integer 1..1000
  ARGV[2] worker    worker id, recorded on each job
  Rate limits and holds (_rates.lua, _holds.lua) bound what a group or the queue may start; a group out of room leaves
  the ring until the Pump's tick frees it. A popped job whose fields a claim cannot use (fn or lease missing, lease,
  attempts or max_attempts not numbers, group not its lane's, a state other than ready, a key that holds no hash) is
  checked before any write to it and ends dead as "corrupt: <what>" (_checks.lua); the rest of the batch is leased as
  usual.
  Derived: rates, rhold, rout, rlog:<group>, prio, plane:<group>, solo, ring, ring:in, counters, recount:seen, lanes,
           caps, active, paused, leases, held, dead, wake, pumpwake, pumplast, stats, job:<id>, lane:<group>
  Returns: {now_ms, then 7 per job (2 for a packed record leased by its head: id, the record as leased, its
           second item told by its first byte, SEP): id, token, fn, args, kwargs, group,
           "<lease_ms>|<max_attempts>|<backoff>|<due_ms>|<timeout>|<meta>"} token = the job's attempts after the
           increment: its fencing token; for a durable job with a journal ("@n" set), {token, then each journal field
           and its value} (_journal.lua's journal_after: its run's durable calls read nothing more); due_ms = when it
           became due (now - due_ms is its wait in the queue); meta = "" or the JSON object mint stored; timeout =
           "<ms>,<soft ms>" (0: none); a field the job's hash left out is sent as its default. The fields of fixed
           form ride in one string (meta last, so it may hold "|"): each element of a reply costs the server
           (docs/reference/performance.md), so a job sends seven, not twelve; a packed record two, which the
           worker decodes (core/stored.py's claimed_row).
]]
--- @include "_chunks"
--- @include "_claim"
--- @include "_clock"
--- @include "_events"
--- @include "_holds"
--- @include "_packed"
--- @include "_pending"
--- @include "_prio"
--- @include "_prio_take"
--- @include "_rates"
--- @include "_ready_batch"
--- @include "_record"
--- @include "_stats"
--- @include "_wake"
local want, worker = tonumber(ARGV[1]), ARGV[2]
local now = now_ms()
local ring = ns .. 'ring'
local out = {now}
local got, leases, held, taken = 0, {}, {}, {}  -- taken: group -> leases this call took under its cap
local dropped, drained = {}, {}  -- groups that left the ring this call; of them, those whose lane emptied
local spare = {}  -- group -> the id popped ahead of its turn (pop)
local solos, gone = nil, {}  -- whether the queue has solos (read with the flags below); the groups whose solo this call took
local first_expiry = math.huge
local packs = not string.find(worker, SEP, 1, true)  -- a worker id with SEP could not go in a packed head
-- The ring's head a batch long: the first turn's chunk, and its length when shorter than asked (no LLEN).
-- A claim of none reads nothing (LRANGE 0 -1 would be the whole ring).
if want < 1 then return out end
local head = redis.call('LRANGE', ring, 0, want - 1)
if #head == 0 then return out end  -- nothing ready: the idle worker's claim costs one command
local ringlen = #head < want and #head or redis.call('LLEN', ring)
-- A queue with no pause, cap, rate limit, hold or solo (the usual one) learns so in one EXISTS, not four; one without
-- flow control in two (the count without solo tells whether it has solos). The same EXISTS tells whether a token
-- waits in the wake list, for the baton at the end (WAKE_TOKEN: the list named six times, once more than the keys
-- before it).
local has_caps, limited = false, false
local wake_list = ns .. 'wake'
local flags = redis.call('EXISTS', ns .. 'paused', ns .. 'caps', ns .. 'rates', ns .. 'rhold', ns .. 'solo',
  wake_list, wake_list, wake_list, wake_list, wake_list, wake_list)
WAKE_TOKEN, flags = flags > 5, flags % 6
if flags == 0 then
  solos = false
else
  local flow = redis.call('EXISTS', ns .. 'paused', ns .. 'caps', ns .. 'rates', ns .. 'rhold')
  solos = flags > flow
  if flow > 0 then
    if redis.call('EXISTS', ns .. 'paused') == 1 then return out end
    has_caps = redis.call('EXISTS', ns .. 'caps') == 1
    -- Flow control (_rates.lua, _holds.lua): rate limits or holds in this queue; a whole-queue limit bounds the batch.
    limited = redis.call('EXISTS', ns .. 'rates', ns .. 'rhold') > 0
  end
end
if limited then
  local q_room = rate_room('', now)
  if q_room and q_room <= 0 then
    rate_exhausted('')
    flush_events()
    return out
  end
  if q_room then want = math.min(want, q_room) end
end

-- How many more jobs a group may start now under its cap (nil: no cap); called only when the queue has caps.
local CAPS = {}  -- group -> cap | false, read a chunk of the ring at a time (prefetch)
local function room(group)
  local cap = CAPS[group]
  if cap == nil then cap = tonumber(redis.call('HGET', ns .. 'caps', group) or '') or false end
  if not cap then return nil end
  local active = tonumber(redis.call('HGET', ns .. 'active', group) or '0')
  return cap - active - (taken[group] or 0)
end

-- Read the caps and rate limits of the groups about to be visited in one command each, not one a group. Returns their
-- solo ids (_solo.lua) by position (false: none), or nil when the queue has no solo. A group with a solo is visited
-- once a call: it leaves the ring as its one job is taken, or for want of room. The solos' packed records are read
-- ahead in one MGET, as a lane's are in pop: a queue of one-job groups claims them a batch at a time too.
local function prefetch(groups)
  local ids = solos and redis.call('HMGET', ns .. 'solo', unpack(groups)) or nil
  if ids and packs then rec_prefetch(ids, #groups) end
  if has_caps then
    local caps = redis.call('HMGET', ns .. 'caps', unpack(groups))
    for i, group in ipairs(groups) do CAPS[group] = tonumber(caps[i] or '') or false end
  end
  if limited then rate_prefetch(groups, has_caps) end  -- with caps every group is visited: remember all
  return ids
end

-- A job leased: its lease, its count under a cap, its rate's note (the record is written by the caller).
local function taken_one(id, group, capped, token, expiry)
  if EVENTS_MAX > 0 then emit('active', id, token) end
  leases[#leases + 1] = expiry
  leases[#leases + 1] = id
  if capped then  -- only a lease under a cap is counted (_held.lua's active_add): held records those
    held[#held + 1] = id
    held[#held + 1] = group
    taken[group] = (taken[group] or 0) + 1
  end
  if expiry < first_expiry then first_expiry = expiry end
  got = got + 1
  if limited and (RATES[group] or RATES['']) then rate_note(group, id, token, now) end
end

-- A packed record read ahead, leased by its head alone (_packed.lua's rec_claim): the record leased goes to the
-- worker whole, two items (id, record), not seven (stored.py's claimed_row decodes it). false: the whole path.
local function lease_packed(id, key, s, group, capped)
  local record, token, expiry = rec_claim(s, group, worker, now)
  if not record then return false end
  rec_put(key, record)
  taken_one(id, group, capped, token, expiry)
  local o = #out
  out[o + 1] = id; out[o + 2] = record
  return true
end

local function lease_one(id, group, capped)
  -- A marker stands for the first job of the group's priority zset (_prio.lua); the test is inline, as
  -- those below (emit, the earliest expiry): a Lua call a job shows in a claim's server time.
  if id == PMARK then id = prio_pop(group, id) end
  if not id then return end
  local key = job_key(id)
  local s = packs and rec_fetched(key)
  if s and lease_packed(id, key, s, group, capped) then return end
  local token, expiry, first, fn, args, kwargs, joined = claim_whole(id, key, group, worker, now)  -- _claim.lua
  if not token then return end
  taken_one(id, group, capped, token, expiry)
  -- Appended in place and in order, not through a table a job.
  local o = #out
  out[o + 1] = id; out[o + 2] = first; out[o + 3] = fn; out[o + 4] = args; out[o + 5] = kwargs; out[o + 6] = group
  out[o + 7] = joined
end

-- Lease up to n jobs from the head of a group's lane; returns how many ids it took from the lane and whether the lane
-- is empty now. A pop asks for one id more than it needs: a lane that answers fewer is known empty (no EXISTS), and
-- the one too many is the group's spare, leased first on its next turn in this batch (whose pop looks ahead again) or
-- put back at the lane's head at the end.
local function pop(group, n, capped, solo)
  if solo then  -- the group's only ready job, no list (a group with a solo has no spare); counted in gone_settle
    gone[#gone + 1] = group
    lease_one(solo, group, capped)
    return 1, true
  end
  local used, s = 0, spare[group]
  if s then
    spare[group] = nil
    lease_one(s, group, capped)
    used = 1
  end
  local k = n - used + 1
  local more = redis.call('LPOP', ns .. 'lane:' .. group, k) or {}
  local m = #more
  if m > 0 then ready_batch(group, -m) end
  local empty = m < k
  if not empty then spare[group], m = more[m], m - 1 end
  prio_pop_all(group, more, m)  -- markers: one ZPOPMIN (the spare's, if one, when it is leased)
  rec_prefetch(more, m)  -- packed records: one MGET (_record.lua)
  for i = 1, m do lease_one(more[i], group, capped) end
  return used + m, empty
end

-- A group's turn: take one job (all it may when alone on the ring); false when it leaves the ring:
-- its lane is empty (then it leaves the lane set too), or its cap or rate limit has no more room.
local function visit(group, alone, solo)
  local take = alone and want - got or 1
  local r = has_caps and room(group)
  local capped = r ~= nil and r ~= false
  local rr = limited and rate_room(group, now)  -- rate room (_rates.lua): nil/false without a limit
  if rr and (not r or rr < r) then r = rr end
  if r and r < take then take = math.max(r, 0) end
  local popped, empty = 0, false
  if take > 0 then popped, empty = pop(group, take, capped, solo) end
  if rr and rr - popped <= 0 then rate_exhausted(group) end
  if empty then
    if not solo then drained[#drained + 1] = group end  -- a solo taken is in gone
    return false
  end
  return not (r and r - popped <= 0)
end

-- One turn of the ring: its groups visited from the head in order, read a chunk at a time (LRANGE), never rotated one
-- by one. The groups that stay move to the tail in that order and those that leave are cut, with one LTRIM and one
-- RPUSH at the turn's end (none when every group stayed). A plain group not alone on the ring (no cap in the queue;
-- in a limited one no limit of its own, nor "*", and no hold: not in RATES or false there, HOLDAT false or unread)
-- goes straight to pop, or with a solo straight to lease_one: the usual turn of a queue of many small groups skips
-- visit's room and rate bookkeeping (a Lua call each).
local function turn()
  local len, seen, keep, chunk, at, solo = ringlen, 0, {}, {}, 0, nil
  while got < want and seen < len do
    if at == #chunk then
      if head then  -- the first turn's first chunk was read with the ring's length
        chunk, at, head = head, 0, nil
      else
        chunk, at = redis.call('LRANGE', ring, seen, seen + want - got - 1), 0
        if #chunk == 0 then break end
      end
      solo = prefetch(chunk)
    end
    at, seen = at + 1, seen + 1
    local group = chunk[at]
    local alone, stays, sid = seen == len and #keep == 0, false, solo and solo[at]
    if not alone and not has_caps and (not limited or not (RATES[group] or HOLDAT[group])) then
      if sid then  -- a plain group's solo: taken, and the group leaves (gone, settled after the loop)
        gone[#gone + 1] = group
        lease_one(sid, group, false)
      else  -- a plain group: no room or rate limit to weigh
        local _, empty = pop(group, 1, false, nil)
        if empty then drained[#drained + 1] = group else stays = true end
      end
    else
      stays = visit(group, alone, sid)
    end
    if stays then
      keep[#keep + 1] = group
    elseif not (sid and gone[#gone] == group) then
      dropped[#dropped + 1] = group
    end
  end
  if seen < len or #keep < len then
    redis.call('LTRIM', ring, seen, -1)
    if #keep > 0 then redis.call('RPUSH', ring, unpack(keep)) end
  end
  ringlen = len - seen + #keep
end

while got < want and ringlen > 0 do turn() end
rec_flush()  -- the packed records leased, in one MSET (_record.lua)
-- An id popped ahead and not used goes back to the head of its lane.
for group, id in pairs(spare) do
  redis.call('LPUSH', ns .. 'lane:' .. group, id)
  ready_batch(group, 1)
end
-- The groups whose solo was taken left the ring and the lane set: they ride with the others' SREMs.
each_chunk(gone, function(groups) redis.call('HDEL', ns .. 'solo', unpack(groups)) end)
each_chunk(joined(dropped, gone), function(groups) redis.call('SREM', ns .. 'ring:in', unpack(groups)) end)
each_chunk(joined(drained, gone), function(groups) redis.call('SREM', ns .. 'lanes', unpack(groups)) end)
gone_settle(gone)  -- _claim.lua
if #drained > 0 and prio_any() then for _, group in ipairs(drained) do prio_drained(group) end end
ready_settle()

if limited and got > 0 and rate_room('', now) == 0 then rate_exhausted('') end
if got > 0 then
  leases_add(leases, got)  -- _claim.lua
  if #held > 0 then redis.call('HSET', ns .. 'held', unpack(held)) end
  -- A lease that expires before the Pump's next planned tick moves its duty earlier: wake it
  -- (as schedule() does for due times). The usual lease outlasts the Pump's park: no wake.
  if first_expiry < pump_next() then wake('pumpwake') end  -- _wake.lua
  active_take(taken)  -- _claim.lua
  count(now, 'claimed', got)
  -- Work left behind: pass the baton to the next parked worker.
  if ringlen > 0 then wake('wake') end
end
flush_events()
return out
