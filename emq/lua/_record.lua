--[[
  _record: a job's stored record, its one owner in Lua (emq/core/stored.py is Python's). Every script
  reads, writes, tests and deletes a job through these helpers and never names a command on the job's
  key, so that a new encoding (issue 33: a packed value beside a hash of side data) changes this file
  and stored.py, not the scripts that touch a job (tests/test_record_owner.py holds them to it).
  Format "1" and v0.2.0's "0" (_defaults.lua): the hash <ns>job:<id>, one field a value, a field left
  out while it holds its default. A durable job's journal ("@" fields, _journal.lua), its errors and its
  progress are fields of the same hash, read and written through the same helpers.
  A record is named by its key (job_key), which scripts pass around; the reads that may meet a key
  written by something other than emq are the try_ forms (redis.pcall: an error reply comes back as a
  table with err, _checks.lua's unhashed turns it into a dead-letter record).
  Suffixes used here: job:<id>
]]
-- The key of job id's record.
local function job_key(id)
  return ns .. 'job:' .. id
end

-- One field (false: absent, or no such job).
local function rec_get(key, field)
  return redis.call('HGET', key, field)
end

-- Some fields, in the order asked (false where absent).
local function rec_fields(key, ...)
  return redis.call('HMGET', key, ...)
end

-- The whole record as a flat list, name then value (empty: no such job).
local function rec_all(key)
  return redis.call('HGETALL', key)
end

-- Whether the record has a field.
local function rec_has(key, field)
  return redis.call('HEXISTS', key, field) == 1
end

-- rec_all, rec_fields and rec_get for a first read: a key that holds no record answers {err = ...}, not a raise.
local function rec_try_get(key, field)
  return redis.pcall('HGET', key, field)
end

local function rec_try_all(key)
  return redis.pcall('HGETALL', key)
end

local function rec_try_fields(key, ...)
  return redis.pcall('HMGET', key, ...)
end

-- Set fields: name, value, name, value, ...
local function rec_set(key, ...)
  return redis.call('HSET', key, ...)
end

-- Set a field unless it is there; 1 when it was set.
local function rec_set_new(key, field, value)
  return redis.call('HSETNX', key, field, value)
end

-- Add n to a numeric field (absent: 0); the new value.
local function rec_add(key, field, n)
  return redis.call('HINCRBY', key, field, n)
end

-- Take fields out (each then reads as absent: its default where it has one).
local function rec_unset(key, ...)
  return redis.call('HDEL', key, ...)
end

-- Whether the job has a record at all.
local function rec_exists(key)
  return redis.call('EXISTS', key) == 1
end

-- How many of the records and other keys given exist (a job's record beside its flow's: one call).
local function rec_count(...)
  return redis.call('EXISTS', ...)
end

-- Delete the records of a list of keys (at most a few thousand: one unpack).
local function rec_delete(keys)
  if #keys > 0 then redis.call('DEL', unpack(keys)) end
end

-- What a job's key holds when it is not a record emq wrote: nil for a record or nothing, else a
-- description for the dead-letter error ('string ("<first 40 bytes, unprintable ones as ?>")', 'list').
local function rec_foreign(key)
  local kind = redis.call('TYPE', key)['ok']
  if kind == 'hash' or kind == 'none' then return nil end
  if kind == 'string' then
    return kind .. ' ("' .. string.gsub(string.sub(redis.call('GET', key), 1, 40), '[^%w%p ]', '?') .. '")'
  end
  return kind
end
