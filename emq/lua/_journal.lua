--[[
  _journal: a durable job's journal, kept as fields of its own hash (emq/core/journal.py owns the
  layout): "@<kind>:<name>" = "<recorded ms>|<seq>|<JSON>" for each done step (s), sleep (z: JSON =
  its wake ms), signal (w: JSON = its payload), spawned child (p) and children's results (c);
  "@t:<name>" = the deadline ms of a wait for signal <name>; "@n" = the last seq. A job that never
  calls ctx.step stores none of them: a plain job pays nothing. A job with any "@" field has "@n" (a wait's
  deadline written before any entry makes it 0): a claim looks for that one field to know a journal is
  there to bring along (journal_item).
  Suffixes used here: job:<id>
]]
-- A claimed job's token as its claim's reply carries it when the job has a journal (its "@n" set; bclaim.lua
-- tests that inline, a plain job sends its token alone): {token, then each journal field and its value}, r
-- the job's hash as HGETALL read it, so the run's first durable call reads nothing more (Claimed.journal).
local function journal_item(r, token)
  local t = {token}
  for i = 1, #r, 2 do
    if string.byte(r[i], 1) == 64 then  -- "@"
      t[#t + 1] = r[i]
      t[#t + 1] = r[i + 1]
    end
  end
  return t
end

-- Record one entry unless it is there already (the first write wins: a later run of the same code
-- keeps the first run's value); returns the stored value.
local function journal_put(key, field, json, now)
  local had = redis.call('HGET', key, field)
  if had then return had end
  local value = now .. '|' .. redis.call('HINCRBY', key, '@n', 1) .. '|' .. json
  redis.call('HSET', key, field, value)
  return value
end
