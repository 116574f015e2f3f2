--[[
  _journal: a durable job's journal, kept as fields of its own hash (emq/core/journal.py owns the
  layout): "@<kind>:<name>" = "<recorded ms>|<seq>|<JSON>" for each done step (s), sleep (z: JSON =
  its wake ms), signal (w: JSON = its payload), spawned child (p) and children's results (c);
  "@t:<name>" = the deadline ms of a wait for signal <name>; "@n" = the last seq. A job that never
  calls ctx.step stores none of them: a plain job pays nothing. A job with any "@" field has "@n" (written
  here only: journal_put counts it, journal_deadline makes it 0), so a claim looks for that one field to know
  a journal is there to bring along (bclaim.lua).
  Suffixes used here: job:<id>
]]
--- @include "_record"
-- {head, then each journal field and its value} of r, a job's hash as HGETALL read it: what journal_read
-- answers (head: the server's ms), and a journaled job's token item in a claim's reply (head: the token), so
-- that the run's durable calls read nothing more (Claimed.journal).
local function journal_after(head, r)
  local t = {head}
  for i = 1, #r, 2 do
    if string.byte(r[i], 1) == 64 then  -- "@"
      t[#t + 1] = r[i]
      t[#t + 1] = r[i + 1]
    end
  end
  return t
end

-- Keep a wait's deadline, and the journal's mark with it (0 while no entry came: see above).
local function journal_deadline(key, name, deadline)
  rec_set(key, '@t:' .. name, deadline)
  rec_set_new(key, '@n', 0)
end

-- Record one entry unless it is there already (the first write wins: a later run of the same code
-- keeps the first run's value); returns the stored value.
local function journal_put(key, field, json, now)
  local had = rec_get(key, field)
  if had then return had end
  local value = now .. '|' .. rec_add(key, '@n', 1) .. '|' .. json
  rec_set(key, field, value)
  return value
end
