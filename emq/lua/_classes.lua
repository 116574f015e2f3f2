--[[
  _classes: the dead letter by error class: per class, how many dead jobs it holds and when the first and
  the last of them died, kept as jobs die and leave the dead set, so the dashboard reads one small hash.
  Suffixes used here: dead:classes
  A class is the error's first line up to its first ':' ("ValueError: bad" -> "ValueError", "stalled:
  lease expired ..." -> "stalled"), or a line's first word when it has no ':' ("parent 4f1 dead" ->
  "parent"); at most CLASS_LEN bytes (emq/core/classes.py says the same in Python; a test compares them).
  Entry: class -> "<count>,<first ms>,<last ms>". Past MAX_CLASSES classes a new one counts as OTHER, so
  the hash stays small whatever the errors say. A dead job that leaves (retried, deleted, purged, trimmed)
  lowers its class's count and the class goes at 0; first and last stay as they were (approximate: the
  first may be older than the oldest dead job still kept).
]]
local CLASS_LEN, MAX_CLASSES, OTHER = 100, 200, '(other)'

-- The class of an error text (a dead job's error field).
local function error_class(text)
  local line = string.match(text or '', '^[^\n]*') or ''
  local class = string.match(line, '^([^:]*):') or string.match(line, '^%s*(%S*)') or ''
  class = string.match(string.sub(class, 1, CLASS_LEN), '^%s*(.-)%s*$')
  if class == '' then return '(none)' end
  return class
end

-- Count a job into (delta 1, at now) or out of (delta -1) the class of its error text.
local function class_tally(text, now, delta)
  local classes_key = ns .. 'dead:classes'
  local class = error_class(text)
  local raw = redis.call('HGET', classes_key, class)
  if not raw and (delta < 0 or redis.call('HLEN', classes_key) >= MAX_CLASSES) then
    class = OTHER
    raw = redis.call('HGET', classes_key, class)
    if not raw and delta < 0 then return end
  end
  local n, first, last = string.match(raw or '', '^(%-?%d+),(%d+),(%d+)$')
  n = (tonumber(n) or 0) + delta
  if n <= 0 then
    redis.call('HDEL', classes_key, class)
  elseif delta > 0 then
    redis.call('HSET', classes_key, class, n .. ',' .. (first or now) .. ',' .. now)
  else
    redis.call('HSET', classes_key, class, n .. ',' .. (first or 0) .. ',' .. (last or 0))
  end
end
