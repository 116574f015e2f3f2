--[[
  _pending: the packed records one call read ahead (FETCHED: one MGET, _record.lua's rec_prefetch) and the ones
  it wrote and has yet to send (PENDING: one MSET, rec_flush), so that a claim's or a finish's batch costs two
  commands, not two a job. Every helper of _record.lua sees PENDING first, then FETCHED, then the server.
]]
--- @include "_packed"
-- Records this call packed and has yet to write (key -> value), written by rec_flush in one MSET; what the
-- call reads of them is what it wrote. Every helper below sees them first. A value is the packed text, or the
-- table of a record's fields that a helper changed (rec_put_fields): packed once, at the flush, however many
-- changes a call makes to it (settling a failure makes two and more).
local PENDING, pending_n = {}, 0
-- Strings this call read ahead in one MGET (rec_prefetch: key -> value), unchecked: rec_claim, rec_complete and
-- rec_ready match their head's pattern from its first byte, and the other helpers read it through fetched,
-- which checks it whole first. A write through these helpers moves its record to PENDING.
local FETCHED = {}

-- The record of key read ahead by rec_prefetch and not written since (nil: none), unchecked: the hot paths
-- (rec_claim, rec_complete, rec_ready) match its head from the first byte, nil for no packed record, and
-- write it back whole (rec_put).
local function rec_fetched(key)
  return FETCHED[key]
end

-- The record of key read ahead, checked whole (packed); nil when none was, or when it only started as a
-- packed record does (then dropped: the helpers read the key again and quarantine what they find).
local function fetched(key)
  local s = FETCHED[key]
  if s and not packed(s) then
    FETCHED[key], s = nil, nil
  end
  return s
end

-- Write a packed record now or at rec_flush (a claim's and a finish's batch: one MSET).
local function rec_put(key, s)
  if not PENDING[key] then pending_n = pending_n + 1 end
  PENDING[key], FETCHED[key] = s, nil
end

-- Write a record's changed fields (a table, rec_table's form) at rec_flush.
local function rec_put_fields(key, h)
  if not PENDING[key] then pending_n = pending_n + 1 end
  PENDING[key], FETCHED[key] = h, nil
end

-- Write the records rec_put and rec_put_fields hold, in one MSET (the call's keys share its slot); a changed
-- record that a value with SEP keeps from packing is written as a hash.
local function rec_flush()
  if pending_n == 0 then return end
  local t, n, hashes = {}, 0, {}
  for key, s in pairs(PENDING) do
    if type(s) == 'table' then
      local packed_text = rec_pack_fields(s)
      if not packed_text then hashes[key] = s end
      s = packed_text
    end
    if s then t[n + 1], t[n + 2], n = key, s, n + 2 end
  end
  if n > 0 then redis.call('MSET', unpack(t)) end
  for key, h in pairs(hashes) do
    redis.call('DEL', key)
    redis.call('HSET', key, unpack(rec_flat(h)))
  end
  PENDING, pending_n, FETCHED = {}, 0, {}
end

-- A packed record (or a pending one) as a hash, for a write the packed form does not take (a value with SEP);
-- true when key held one.
local function unpack_to_hash(key)
  local pending = PENDING[key]
  local changed = type(pending) == 'table'  -- its changed fields (a GET's error is a table too: not this)
  local s = pending or fetched(key) or redis.pcall('GET', key)
  if not changed and not packed(s) then return false end
  if PENDING[key] then PENDING[key], pending_n = nil, pending_n - 1 end
  FETCHED[key] = nil
  local list = changed and rec_flat(s) or rec_unpack(s)
  redis.call('DEL', key)
  redis.call('HSET', key, unpack(list))
  return true
end

