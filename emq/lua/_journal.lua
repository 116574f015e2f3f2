--[[
  _journal: a durable job's journal, kept as fields of its own hash (emq/core/journal.py owns the
  layout): "@<kind>:<name>" = "<recorded ms>|<seq>|<JSON>" for each done step (s), sleep (z: JSON =
  its wake ms), signal (w: JSON = its payload), spawned child (p) and children's results (c);
  "@t:<name>" = the deadline ms of a wait for signal <name>; "@n" = the last seq. A job that never
  calls ctx.step stores none of them: a plain job pays nothing.
  Suffixes used here: job:<id>
]]
-- Record one entry unless it is there already (the first write wins: a later run of the same code
-- keeps the first run's value); returns the stored value.
local function journal_put(key, field, json, now)
  local had = redis.call('HGET', key, field)
  if had then return had end
  local value = now .. '|' .. redis.call('HINCRBY', key, '@n', 1) .. '|' .. json
  redis.call('HSET', key, field, value)
  return value
end
