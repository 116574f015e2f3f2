--[[
  _record: a job's stored record, its one owner in Lua (emq/core/stored.py is Python's). Every script
  reads, writes, tests and deletes a job through these helpers and never names a command on the job's
  key, so that a new encoding changes this file and stored.py, not the scripts that touch a job
  (tests/test_record_owner.py holds them to it).
  Two encodings share the key <ns>job:<id>, and every helper reads both:
  - Formats "0" (v0.2.0) and "1": a hash, one field a value.
  - Format "2": one packed string (_packed.lua). A claim and a finish read a batch's records in one MGET
    (rec_prefetch), lease or complete a plain job by its head alone (rec_claim, rec_complete) and write the
    batch in one MSET (rec_put, rec_flush); a mint builds records by concatenation and writes a chunk in one
    MSET. They never decode a record into a Lua table, which costs what HGETALL does; the other helpers do,
    once a call a record (rec_decoded), and a record read ahead keeps its changes as that table until the
    flush packs it once (rec_put_fields). The Pump promotes a plain due job by its head too (rec_ready). A
    record with a journal (a durable job's steps) or a value holding SEP stays a hash.
  In either, a field is left out while it holds its default (_defaults.lua). This release writes the format
  RECORD_FORMAT names (the scripts' prologue, EMQ_RECORD_FORMAT: core/scripts.py), "1" unless set: a
  release must read a format before one writes it (stored.py, rule 2).
  A record is named by its key (job_key), which scripts pass around; the reads that may meet a key written
  by something other than emq are the try_ forms (an error reply comes back as a table with err, as
  redis.pcall's; _checks.lua's unhashed turns it into a dead-letter record).
  Suffixes used here: job:<id>
]]
--- @include "_packed"
--- @include "_pending"
-- The keys this call found holding a hash (read_fields), which it reads and writes with hash commands at once, no
-- GET first under format 2 (a durable job's journal, many calls a step). Reset each call (functions.RESET).
local HASHED = {}

-- The keys of the ids this call read ahead (rec_prefetch), so a batch's job makes its key once, not once a read:
-- a concatenation is a new string hashed whole. Reset each call (functions.RESET).
local KEY_OF = {}

-- The key of job id's record: made in key_of alone; job_key reads the read-ahead's memo first.
local function key_of(id) return ns .. 'job:' .. id end
local function job_key(id) return KEY_OF[id] or key_of(id) end

-- Read the records of ids[1..n] ahead (false: no job there, skipped), in one MGET, when this release writes packed
-- ones (a hash answers false to MGET: it is read as before).
local function rec_prefetch(ids, n)
  if RECORD_FORMAT ~= '2' then return end
  local keys, k = {}, 0
  for i = 1, n do
    local id = ids[i]
    if id then
      local key = key_of(id)
      KEY_OF[id] = key
      k = k + 1
      keys[k] = key
    end
  end
  if k == 0 then return end
  local got = redis.call('MGET', unpack(keys))
  for i = 1, k do  -- nothing checked here: the head's pattern when read (rec_claim...), or fetched's whole check
    local s = got[i]
    if s then FETCHED[keys[i]] = s end
  end
end

-- The whole record as a flat list, as HGETALL; {} for no record, {err = ...} for a key that holds no
-- record (try) or a raise (not try).
local function read_all(key, try)
  local s = PENDING[key] or fetched(key)
  if type(s) == 'table' then return rec_flat(s), true end
  if s then return rec_unpack(s), true end
  if RECORD_FORMAT == '2' and not HASHED[key] then  -- the format this release writes is tried first
    s = redis.pcall('GET', key)
    if type(s) == 'string' then
      if packed(s) then return rec_unpack(s), true end
      local r = redis.pcall('HGETALL', key)  -- a foreign string: WRONGTYPE
      if try or not r.err then return r end
      error(r)
    end
    if s == false then return {} end
  end
  local r = redis.pcall('HGETALL', key)
  if not r.err then return r end
  s = redis.pcall('GET', key)  -- not a hash: packed, or foreign
  if packed(s) then return rec_unpack(s), true end
  if try then return r end
  error(r)
end

-- The fields asked for, from a flat list (false where absent).
local function pick(list, names)
  local h, out = {}, {}
  for i = 1, #list, 2 do h[list[i]] = list[i + 1] end
  for i = 1, #names do out[i] = h[names[i]] or false end
  return out
end

-- Fields of a packed record's text or of its changed fields (a table), in the order asked (false where absent).
local function picked(s, ...)
  local h, out, names = type(s) == 'table' and s or rec_decoded(s), {}, {...}
  for i = 1, #names do out[i] = h[names[i]] or false end
  return out
end

local function read_fields(key, try, ...)
  local s = PENDING[key] or fetched(key)
  if s then return picked(s, ...) end  -- read or written by this call: decoded once (rec_decoded), or changed
  if RECORD_FORMAT ~= '2' or HASHED[key] then
    local r = redis.pcall('HMGET', key, ...)
    if not r.err then return r end
  else  -- the format this release writes first; a hash (a journal, a value with SEP, an older job): its fields
    s = redis.pcall('GET', key)
    if packed(s) then return picked(s, ...) end
    if s == false then return pick({}, {...}) end
    local r = redis.pcall('HMGET', key, ...)
    if not r.err then
      HASHED[key] = true
      return r
    end
  end
  local list = read_all(key, try)
  if list.err then return list end
  return pick(list, {...})
end

-- One field (false: absent, or no such job); whether the record has it; some fields, in the order asked (false
-- where absent); the whole record as a flat list, name then value (empty: no such job).
local function rec_get(key, field) return read_fields(key, false, field)[1] end
local function rec_has(key, field) return read_fields(key, false, field)[1] ~= false end
local function rec_fields(key, ...) return read_fields(key, false, ...) end
local function rec_all(key) return read_all(key, false) end

-- rec_get, rec_all and rec_fields for a first read: a key that holds no record answers {err = ...}, not a raise.
local function rec_try_get(key, field)
  local r = read_fields(key, true, field)
  if r.err then return r end
  return r[1]
end

-- (and whether the record is packed: rec_update's third argument)
local function rec_try_all(key)
  return read_all(key, true)
end

local function rec_try_fields(key, ...)
  return read_fields(key, true, ...)
end

-- Change a packed record, its fields h (a table name -> value, nil: absent, the caller's to change): edit(h)
-- changes them and returns the command's answer; nil when the change made it a hash (a value with SEP: the
-- caller runs the hash command then). A record the call read ahead or wrote waits for rec_flush's MSET.
local function repack(key, h, edit)
  local answer = edit(h)
  if PENDING[key] or FETCHED[key] then  -- packed at rec_flush, once for all of the call's changes
    rec_put_fields(key, h)
    return answer
  end
  local out = rec_pack_fields(h)
  if not out then
    unpack_to_hash(key)
    return nil
  end
  redis.call('SET', key, out)
  return answer
end

-- HSET's change (name, value, ...) as an edit of a packed record's fields; it answers HSET's count.
local function setting(args)
  return function(h)
    local added = 0
    for i = 1, #args, 2 do
      if h[args[i]] == nil then added = added + 1 end
      h[args[i]] = tostring(args[i + 1])
    end
    return added
  end
end

-- The packed record at key, or nil (a hash, nothing, or something foreign).
local function packed_at(key)
  local s = PENDING[key] or fetched(key)  -- packed text, or a pending record's changed fields
  if s then return s end
  if HASHED[key] then return nil end
  s = redis.pcall('GET', key)  -- a hash's answer is an error table: not a record's fields
  if packed(s) then return s end
  return nil
end

-- Run a hash command on key, or the same change as edit on its packed record. The format this release
-- writes is tried first; the other when the key answers WRONGTYPE.
local function write(key, edit, command, ...)
  local s = PENDING[key] or fetched(key) or (RECORD_FORMAT == '2' and packed_at(key))
  if not s then
    local r = redis.pcall(command, key, ...)
    if type(r) ~= 'table' or not r.err then return r end
    s = packed_at(key)
    if not s then error(r) end
  end
  local answer = repack(key, type(s) == 'table' and s or rec_take(s), edit)
  if answer ~= nil then return answer end
  return redis.call(command, key, ...)
end

-- Set fields (name, value, ...) of a record read whole as list (rec_try_all; was_packed, its second answer):
-- a packed one is packed again from list, no second read, and written with the call's others (rec_flush).
local function rec_update(key, list, was_packed, ...)
  if was_packed then
    local h = {}
    for i = 1, #list, 2 do h[list[i]] = list[i + 1] end
    if repack(key, h, setting({...})) ~= nil then return end
  end
  return redis.call('HSET', key, ...)
end

-- Set fields: name, value, name, value, ....
local function rec_set(key, ...)
  return write(key, setting({...}), 'HSET', ...)
end

-- Write new packed records (key, value, key, value, ...): one MSET a thousand.
local function rec_write_all(kv)
  for i = 1, #kv, 2000 do
    redis.call('MSET', unpack(kv, i, math.min(i + 1999, #kv)))
  end
end

-- A new job's record from its fields (name, value, ...; v among them), in the format this release writes:
-- packed under RECORD_FORMAT "2" unless a value holds SEP, else a hash (HSET: no table made a job).
local function rec_create(key, ...)
  if RECORD_FORMAT == '2' then
    local s = rec_pack({...})
    if s then
      redis.call('SET', key, s)
      HASHED[key] = nil
      return
    end
  end
  redis.call('HSET', key, ...)
end

-- Set a field unless it is there; 1 when it was set.
local function rec_set_new(key, field, value)
  return write(key, function(h)
    if h[field] ~= nil then return 0 end
    h[field] = tostring(value)
    return 1
  end, 'HSETNX', field, value)
end

-- Add n to a numeric field (absent: 0); the new value.
local function rec_add(key, field, n)
  return write(key, function(h)
    local v = (tonumber(h[field] or '0') or 0) + n
    h[field] = tostring(v)
    return v
  end, 'HINCRBY', field, n)
end

-- Take fields out (each then reads as absent: its default where it has one).
local function rec_unset(key, ...)
  local names = {...}
  return write(key, function(h)
    local gone = 0
    for i = 1, #names do
      if h[names[i]] ~= nil then gone, h[names[i]] = gone + 1, nil end
    end
    return gone
  end, 'HDEL', ...)
end

-- Whether the job has a record at all.
local function rec_exists(key)
  return PENDING[key] ~= nil or FETCHED[key] ~= nil or redis.call('EXISTS', key) == 1
end

-- How many of the records and other keys given exist (a job's record beside its flow's: one call).
local function rec_count(...)
  return redis.call('EXISTS', ...)
end

-- Delete the records of a list of keys (at most a few thousand: one unpack).
local function rec_delete(keys)
  if #keys == 0 then return end
  for i = 1, #keys do
    if PENDING[keys[i]] then PENDING[keys[i]], pending_n = nil, pending_n - 1 end
    FETCHED[keys[i]], HASHED[keys[i]] = nil, nil
  end
  redis.call('DEL', unpack(keys))
end

-- What a job's key holds when it is not a record emq wrote: nil for a record or nothing, else a
-- description for the dead-letter error ('string ("<first 40 bytes, unprintable ones as ?>")', 'list').
local function rec_foreign(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'hash' or kind == 'none' then return nil end
  if kind == 'string' then
    local s = redis.call('GET', key)
    if packed(s) then return nil end
    return kind .. ' ("' .. string.gsub(string.sub(s, 1, 40), '[^%w%p ]', '?') .. '")'
  end
  return kind
end
