--[[
  _packed: format "2"'s encoding of a job's record, one string (_record.lua, its owner, says when it is
  written; core/stored.py decodes it in Python the same way). PACKED, then the values of HEAD's slots in
  its order ("" for absent), then SEP name SEP value for each other field. SEP is the unit separator (byte
  31), which no JSON text holds unescaped; a value that holds it is never packed. A claim and a finish read
  and rewrite only the head and hand the rest on whole.
  The head's second slot is not a field: its marks, a letter for each field a claim or a finish must act on
  (MARK: priority, notify, unique, unique until start, unknown, result), written by every writer of a packed
  record from its fields. A plain job's are "", so a finish tells it by its first bytes (state, marks, token,
  no finished time: one plain find of a start made once a call), a fresh job's claim too, and neither searches
  the rest.
]]
--- @include "_clock"
local SEP = '\031'
local PACKED = '\031v\0312\031'  -- how a packed record starts: the pair v = 2, unnamed
-- The head's slots: the fields a run changes or a claim reads, in the order the hot paths read them; the
-- second holds the marks (no field).
local HEAD_AT = {state = 1, attempts = 3, finished = 4, group = 5, lease = 6, claimed = 7, lease_until = 8, worker = 9}
-- The patterns (one table: a script's main chunk may hold 200 locals), built from one value's pattern by
-- concatenation only, as `string` is not there when a library loads:
--   head      the head's nine values, then where the rest starts (at its SEP, or past the end when there is none)
--   shape     the same without captures: only tells a packed record (no string made for its values)
--   claim     a ready record's marks, attempts, finished, group and lease, and where its rest starts (rec_claim)
--   fresh     a fresh ready record's lease and where its rest starts, read past its known start (HEADS)
--   complete  an active record with no mark but a priority and no finished time: its marks ("" or "p"), its
--             token, and where its group starts (rec_complete)
--   ready     a scheduled record's marks and group (rec_ready)
local MATCH = {fresh = '^([^\031]*)\031\031\031()', complete = '^\031v\0312\031active\031(p?)\031(%d+)\031\031()'}
do
  local v, shape = '\031([^\031]*)', '\031[^\031]*'
  MATCH.head = '^\031v\0312' .. v .. v .. v .. v .. v .. v .. v .. v .. v .. '()'
  MATCH.shape = '^\031v\0312' .. shape .. shape .. shape .. shape .. shape .. shape .. shape .. shape .. shape
  MATCH.claim = '^\031v\0312\031ready' .. v .. v .. v .. v .. v .. shape .. shape .. shape .. '()'
  MATCH.ready = '^\031v\0312\031scheduled' .. v .. shape .. shape .. v
end
-- Heads known by their start, made once a call: a group's fresh ready job (no mark, never claimed, no finished
-- time), by group (HEADS[1]); an active plain job's, by token (HEADS[2]), and its completed head's front with the
-- call's now (HEADS[3]). A plain find of the start and a shorter pattern, or none, replace the head's pattern.
-- Reset each call (functions.RESET).
local HEADS = {{}, {}, {}}
-- The fields marked, in this order, and each one's letter (rec_marks); a unique key freed at start ("s...")
-- is "s", not "u".
local MARK = {'priority', 'notify', 'unique', 'unknown', 'result',
  priority = 'p', notify = 'n', unique = 'u', unknown = 'k', result = 'r'}
-- A durable job's journal (_journal.lua: fields "@..."): a job that records one is a hash from then on, where a
-- step is one HSET, not the whole record rewritten (a journal grows with every step). Looked for once in a
-- record's rest; a value that starts with "@" is found too, and keeps its job a hash: never a wrong read.
local JOURNAL = '\031@'

-- The marks of a record's fields (get: name -> value or nil).
local function rec_marks(get)
  local m = ''
  for i = 1, 5 do
    local value = get[MARK[i]]
    if value and value ~= '' then
      local letter = MARK[MARK[i]]
      if letter == 'u' and string.sub(value, 1, 1) == 's' then letter = 's' end
      m = m .. letter
    end
  end
  return m
end

-- The head of packed record s: state, marks, attempts, finished, group, lease, claimed, lease_until, worker
-- ("" for absent), and where the rest begins.
local function rec_head(s)
  return string.match(s, MATCH.head)
end

-- A packed record's fields as a table (name -> value, v among them), made by a constructor (its slots made at once,
-- not grown field by field).
local function rec_table(s)
  local state, _, attempts, finished, group, lease, claimed, lease_until, worker, at = rec_head(s)
  local h = {v = '2', state = state, attempts = attempts, claimed = claimed, lease_until = lease_until,
    finished = finished, worker = worker, lease = lease, group = group}
  for name in pairs(HEAD_AT) do
    if h[name] == '' then h[name] = nil end
  end
  at = at + 1
  while at <= #s do
    local stop = string.find(s, SEP, at, true)
    local name = string.sub(s, at, (stop or 0) - 1)
    if not stop then h[name] = nil; break end  -- a name with no value: not a field
    local next_stop = string.find(s, SEP, stop + 1, true)
    h[name] = string.sub(s, stop + 1, (next_stop or 0) - 1)
    at = next_stop and next_stop + 1 or #s + 1
  end
  return h
end

-- A packed record's fields, decoded once a call a record: settling a failure reads a record five times and more
-- (the retry rule's fields, the error history, the worker). Keyed by the string itself, so a record written anew
-- is a new entry; a write takes its record's table (rec_take) and leaves the new one's (rec_pack_fields). Reset
-- each call (functions.RESET). Read only.
local DECODED = {}
local function rec_decoded(s)
  local h = DECODED[s]
  if not h then
    h = rec_table(s)
    DECODED[s] = h
  end
  return h
end

-- A fields table as a flat list, name then value, v first: what HGETALL answers a hash's.
local function rec_flat(h)
  local t, n = {'v', '2'}, 2
  for name, value in pairs(h) do
    if name ~= 'v' then t[n + 1], t[n + 2], n = name, value, n + 2 end
  end
  return t
end

-- A packed record's fields as a flat list (rec_decoded's, so one decoder reads the layout).
local function rec_unpack(s)
  return rec_flat(rec_decoded(s))
end

-- A packed record's fields for a change: its decoded table, taken from DECODED (records of equal text share one).
local function rec_take(s)
  local h = DECODED[s]
  if h then DECODED[s] = nil else h = rec_table(s) end
  return h
end

-- Fields (a table name -> value) packed, or nil when a value holds SEP. The table is left as the packed record
-- decodes (values as text, a head field "" absent), and kept in DECODED for the record's next read.
local function rec_pack_fields(h)
  local head, t, n = {'', '', '', '', '', '', '', '', ''}, {}, 0
  for name, i in pairs(HEAD_AT) do
    local value = h[name] or ''
    head[i] = value
    if value == '' then h[name] = nil end
  end
  head[2] = rec_marks(h)
  for name, value in pairs(h) do
    if not HEAD_AT[name] and name ~= 'v' then t[n + 1], t[n + 2], n = name, value, n + 2 end
  end
  -- Every value is text or a number (the edits' tostring; table.concat takes both): one search for SEP in
  -- them all, not one a value.
  local values = table.concat(head, '') .. (n > 0 and table.concat(t, '') or '')
  if string.find(values, SEP, 1, true) then return nil end
  local rest = n > 0 and SEP .. table.concat(t, SEP) or ''
  if string.find(rest, JOURNAL, 1, true) then return nil end
  h.v = '2'
  local s = PACKED .. table.concat(head, SEP) .. rest
  DECODED[s] = h
  return s
end

-- A flat list of fields packed, or nil when a value holds SEP (such a record stays a hash).
local function rec_pack(list)
  local head, t, n, marked = {'', '', '', '', '', '', '', '', ''}, {}, 0, {}
  for i = 1, #list, 2 do
    local name, value = list[i], tostring(list[i + 1])
    if string.find(value, SEP, 1, true) then return nil end
    local at = HEAD_AT[name]
    if at then
      head[at] = value
    elseif name ~= 'v' then
      t[n + 1], t[n + 2], n = name, value, n + 2
      if MARK[name] then marked[name] = value end
    end
  end
  head[2] = rec_marks(marked)
  local rest = n > 0 and SEP .. table.concat(t, SEP) or ''
  if string.find(rest, JOURNAL, 1, true) then return nil end
  return PACKED .. table.concat(head, SEP) .. rest
end

-- Whether a string is a packed record (not a string something other than emq wrote at a job's key).
local function packed(s)
  return type(s) == 'string' and string.find(s, MATCH.shape) ~= nil
end

-- A new job's head up to its lease: its state, marks, no attempts, no finished time, its group. rec_claim knows a
-- fresh ready job by it.
local function rec_front(state, marks, group)
  return PACKED .. state .. SEP .. marks .. '\031\031\031' .. group .. SEP
end

-- A new job's packed record from its head's state, marks, group and lease and its rest (rec_rest's, joined;
-- the marks its fields call for: rec_marks).
local function rec_fresh(state, marks, group, lease, rest)
  return rec_front(state, marks, group) .. lease .. '\031\031\031' .. rest
end

-- Fields (name, value, ...) as a packed record's rest, or nil when a value holds SEP.
local function rec_rest(list)
  for i = 2, #list, 2 do
    if string.find(list[i], SEP, 1, true) then return nil end
  end
  return #list > 0 and SEP .. table.concat(list, SEP) or ''
end

-- Whether a value may go into a packed record.
local function rec_clean(value)
  return not string.find(value, SEP, 1, true)
end

-- A call's leases in ms by their text, each read and checked once (a batch's jobs share one or two; a tonumber is
-- a strtod). Reset each call (functions.RESET).
local LEASE_MS = {}
local function lease_ms(lease)
  local ms = LEASE_MS[lease]
  if ms == nil then
    ms = tonumber(lease)
    if not ms or ms ~= math.floor(ms) or ms < 1 then ms = false end
    LEASE_MS[lease] = ms
  end
  return ms
end

-- A ready packed record leased by its head alone: the record leased, its token and expiry (the worker decodes the
-- record whole: stored.py's claimed_row); nil when the claim needs the whole record (not ready in group, a
-- unique key freed at start, a head a claim cannot use). The caller has seen that worker holds no SEP (once a
-- call). A durable job's journal ("@n") is never in a packed record (JOURNAL).
local function rec_claim(s, group, worker, now)
  local marks, attempts, finished, g, lease, at = '', '', '', group, nil, nil
  local fresh = HEADS[1][group]
  if not fresh then
    fresh = rec_front('ready', '', group)
    HEADS[1][group] = fresh
  end
  if string.find(s, fresh, 1, true) == 1 then lease, at = string.match(s, MATCH.fresh, #fresh + 1) end
  if not at then marks, attempts, finished, g, lease, at = string.match(s, MATCH.claim) end
  if not at or g ~= group or marks ~= '' and string.find(marks, 's', 1, true) then return nil end
  local ms, token = lease_ms(lease), 1  -- a job never claimed stores no attempts: its token is 1, no tonumber
  if not ms then return nil end
  if attempts ~= '' then
    token = tonumber(attempts)
    if not token then return nil end
    token = token + 1
  end
  local expiry = now + ms
  -- One concatenation, num_text's memo read here first: no Lua call a job for either.
  return PACKED .. 'active' .. SEP .. marks .. SEP .. (NUM_TEXT[token] or num_text(token)) .. SEP .. finished .. SEP
    .. g .. SEP .. lease .. SEP .. (NUM_TEXT[now] or num_text(now)) .. SEP .. (NUM_TEXT[expiry] or num_text(expiry))
    .. SEP .. worker .. string.sub(s, at), token, expiry
end

-- A scheduled packed record made ready by its head alone (the Pump's promotion of a due job): the record and its
-- group; nil when the promotion needs the whole record (not scheduled, no group, or a priority, which decides
-- the lane's end it joins).
local function rec_ready(s)
  local marks, group = string.match(s, MATCH.ready)
  if not group or group == '' or string.find(marks, 'p', 1, true) then return nil end
  return PACKED .. 'ready' .. string.sub(s, #PACKED + #'scheduled' + 1), group
end

-- An active packed record completed by its head alone (value: the result JSON, "null" left out); nil when the
-- finish needs the whole record (not this token's, a finished time there, or a mark to act on: a flow or quota
-- to tell, a unique key, an unknown name's count, a result already there). A priority's mark stays.
local function rec_complete(s, token, value, now)
  local active = HEADS[2][token]
  if not active then
    active = PACKED .. 'active\031\031' .. token .. '\031\031'
    HEADS[2][token] = active
    HEADS[3][token] = PACKED .. 'completed\031\031' .. token .. SEP .. (NUM_TEXT[now] or num_text(now)) .. SEP
  end
  if value == 'null' and string.find(s, active, 1, true) == 1 then  -- no mark, this token's, no finished time
    return HEADS[3][token] .. string.sub(s, #active + 1)
  end
  local marks, attempts, at = string.match(s, MATCH.complete)
  if attempts ~= token or value ~= 'null' and string.find(value, SEP, 1, true) then return nil end
  if value == 'null' then
    return PACKED .. 'completed' .. SEP .. marks .. SEP .. token .. SEP .. (NUM_TEXT[now] or num_text(now)) .. SEP
      .. string.sub(s, at)
  end
  return PACKED .. 'completed' .. SEP .. marks .. 'r' .. SEP .. token .. SEP .. (NUM_TEXT[now] or num_text(now)) ..
    SEP .. string.sub(s, at) .. '\031result\031' .. value
end
