--[[
  sift: read one of a queue's sets in order from a cursor, between two scores, keeping the jobs that pass
  the filters: a bounded slice a call (at most ARGV[7] entries read), whatever the set's size. Reads only.
  The cursor is the last entry read, (score, id), found again by its place in the set's order, not by a
  rank: jobs that leave the set meanwhile (an action on the ones kept, the Pump's promotions, claims)
  never make the next call skip one. The dashboard's filtered lists and every "all that match" action
  read through it.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] set       the set's suffix: waiting | scheduled | leases | reclaims | done | dead | cancelled
  ARGV[2] order     "asc" (lowest score first) | "desc"
  ARGV[3] min       lowest score kept, ms ("-inf": no bound)
  ARGV[4] max       highest score kept, ms ("+inf": no bound)
  ARGV[5] after     "" from the start of the range, else the score of the last entry read
  ARGV[6] after_id  the id of the last entry read ("" when after is "")
  ARGV[7] budget    most entries read, 1..5000
  ARGV[8] want      most jobs kept, 1..1000
  ARGV[9] name      "" or a part of the job's name, in lower case (ASCII letters fold)
  ARGV[10] fn       "" or the job's name exactly
  ARGV[11] group    "" or the job's group exactly
  ARGV[12] origin   "" or the job's origin exactly
  ARGV[13] class    "" or the class of the job's error (_classes.lua's error_class), "*": any error
  ARGV[14] text     "" or a part of the job's args or kwargs JSON, in lower case (ASCII letters fold)
  ARGV[15] classes  "1": each job kept comes with the class of its error ("" without one), so a page can
                    count failures by class without their texts crossing the wire; else ""
  An entry whose job is gone is kept only when no filter is set (a list shows it as trimmed).
  Derived: job:<id>
  Returns: {in_range, read, last_score|"", last_id|"", more 0|1, id_1, score_1, [class_1,] ...}
           in_range = entries between min and max now; more = 1 while entries past the cursor remain
]]
--- @include "_classes"
--- @include "_record"
local z = ns .. ARGV[1]
local desc, lo_s, hi_s = ARGV[2] == 'desc', ARGV[3], ARGV[4]
local after, after_id = ARGV[5], ARGV[6]
local budget, want = tonumber(ARGV[7]), tonumber(ARGV[8])
local name, fn, group, origin, class, text = ARGV[9], ARGV[10], ARGV[11], ARGV[12], ARGV[13], ARGV[14]
local with_class = ARGV[15] == '1'
local CHUNK = 100

-- Whether a sorts before b byte by byte, as a sorted set orders the members of one score.
local function less(a, b)
  for i = 1, math.min(#a, #b) do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return #a < #b
end

-- The rank of the first entry past (s, id) (strict: past; else at or past), ranks counted lowest first.
local function rank_of(s, id, strict)
  local lo = redis.call('ZCOUNT', z, '-inf', '(' .. s)
  local hi = lo + redis.call('ZCOUNT', z, s, s)
  while lo < hi do  -- the entries of score s sit at lo..hi-1, by id
    local mid = math.floor((lo + hi) / 2)
    local m = redis.call('ZRANGE', z, mid, mid)[1]
    if less(m, id) or (strict and m == id) then lo = mid + 1 else hi = mid end
  end
  return lo
end

local first = redis.call('ZCOUNT', z, '-inf', '(' .. lo_s)  -- the range's ranks: first..last
local last = redis.call('ZCOUNT', z, '-inf', hi_s) - 1
local from = first
if desc then from = last end
if after ~= '' then
  if desc then from = math.min(rank_of(after, after_id, false) - 1, last)
  else from = math.max(rank_of(after, after_id, true), first) end
end

local filtered = name ~= '' or fn ~= '' or group ~= '' or origin ~= '' or class ~= '' or text ~= ''

-- The fields a filter reads, in one HMGET a job: its error and arguments only when a filter needs them.
local fields = {'fn', 'group', 'origin'}
local at_error, at_args = 0, 0
if class ~= '' then fields[#fields + 1] = 'error'; at_error = #fields end
if text ~= '' then fields[#fields + 1] = 'args'; fields[#fields + 1] = 'kwargs'; at_args = #fields - 1 end

-- Whether the job passes every filter that is set.
local function passes(id)
  if not filtered then return true end
  local f = rec_fields(job_key(id), unpack(fields))
  if not f[1] then return false end
  if (fn ~= '' and f[1] ~= fn) or (name ~= '' and not string.find(string.lower(f[1]), name, 1, true))
      or (group ~= '' and f[2] ~= group) or (origin ~= '' and (f[3] or '') ~= origin) then return false end
  if at_error > 0 then
    local e = f[at_error]
    if not e or (class ~= '*' and error_class(e) ~= class) then return false end
  end
  if at_args > 0 then
    return string.find(string.lower(f[at_args] or ''), text, 1, true) ~= nil
      or string.find(string.lower(f[at_args + 1] or ''), text, 1, true) ~= nil
  end
  return true
end

local out, kept, read, at = {}, 0, 0, nil
local last_score, last_id = '', ''
while read < budget and kept < want do
  local a, b = from, from + math.min(CHUNK, budget - read) - 1
  if desc then a, b = math.max(from - math.min(CHUNK, budget - read) + 1, first), from end
  if (desc and b < first) or (not desc and a > last) then break end
  if not desc then b = math.min(b, last) end
  local chunk = redis.call('ZRANGE', z, a, b, 'WITHSCORES')
  local n = #chunk / 2
  if n == 0 then break end
  for j = 1, n do
    local k = j
    if desc then k = n - j + 1 end
    local id, score = chunk[2 * k - 1], chunk[2 * k]
    read = read + 1
    last_score, last_id = score, id
    at = desc and b - (j - 1) or a + (j - 1)
    if passes(id) then
      kept = kept + 1
      out[#out + 1] = id
      out[#out + 1] = score
      if with_class then
        local e = rec_get(job_key(id), 'error')
        out[#out + 1] = e and error_class(e) or ''
      end
      if kept >= want then break end
    end
  end
  if desc then from = at - 1 else from = at + 1 end
end
local more = 0
if at and ((desc and at > first) or (not desc and at < last)) then more = 1 end
local reply = {math.max(last - first + 1, 0), read, last_score, last_id, more}
for _, v in ipairs(out) do reply[#reply + 1] = v end
return reply
