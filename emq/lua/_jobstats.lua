--[[
  _jobstats: statistics per job name, a window a minute (the dashboard's charts). The worker tallies the
  attempts the finish settled, by the state it decided (emq/runtime/tally.py), and sends the tally about
  once a second at the end of a finish's ARGV: so a window costs a batch nothing but the check for it, and
  one BITFIELD a name a second. Counting in the finish instead (reading claimed, due and fn, and bucketing
  each job in Lua) made it much dearer a job: docs/reference/performance.md has the figures.
  Suffixes used here: jstat:m<minute>:<name>, jstat:names
  A window is a string of big-endian u32 slots (emq/core/histogram.py owns the layout): 0 settled,
  1..4 counts, 5 and 6 the longest run and wait in ms, then a count per latency bucket. The tally's
  pairs are (slot as "#<n>", value): every slot is added, but #5 and #6, which keep the larger.
  Name '' is the queue's total, tallied by the worker like a name. Each tally starts with slot #0.
]]
-- A name's minute window (ns .. 'jstat:m' .. minute .. ':' .. name, built where used: tests/test_cluster_slots.py
-- reads each key of a script as built from ns) on its first write (slot #0 holds just what was added): its
-- expiry (75 min: the chart's hour and the Pump's roll of it) and the name's entry in jstat:names.
local function stat_born(key, name, minute, settled_now, added)
  if settled_now == added then
    redis.call('PEXPIRE', key, 4500000)
    redis.call('ZADD', ns .. 'jstat:names', minute, name)
  end
end

-- Add one name's pairs (ARGV[from], ARGV[from + 1], ... k pairs) into its minute's window: one BITFIELD
-- (the maxima read, the counts added), a second only when a maximum grew (stat_born on its first write).
local function stat_write(name, from, k, minute)
  local key = ns .. 'jstat:m' .. minute .. ':' .. name
  local args, run, wait = {'GET', 'u32', '#5', 'GET', 'u32', '#6'}, 0, 0
  for j = from, from + 2 * k - 2, 2 do
    local slot, v = ARGV[j], ARGV[j + 1]
    if slot == '#5' then
      run = tonumber(v)
    elseif slot == '#6' then
      wait = tonumber(v)
    else
      args[#args + 1] = 'INCRBY'
      args[#args + 1] = 'u32'
      args[#args + 1] = slot
      args[#args + 1] = v
    end
  end
  local r = redis.call('BITFIELD', key, unpack(args))
  if run > r[1] or wait > r[2] then
    redis.call('BITFIELD', key, 'SET', 'u32', '#5', math.min(math.max(run, r[1]), 4294967295),
      'SET', 'u32', '#6', math.min(math.max(wait, r[2]), 4294967295))
  end
  stat_born(key, name, minute, r[3], tonumber(ARGV[from + 1]))
end

-- Write the tally a call carries, if any: its ARGV ends with "jstats:<e>" after e elements of names,
-- each name, k, then k pairs. An ARGV without it ends with a number (a finish item's token or retry).
local function stat_apply(now)
  local e = string.match(ARGV[#ARGV] or '', '^jstats:(%d+)$')
  if not e then return end
  local minute, i, stop = math.floor(now / 60000), #ARGV - tonumber(e), #ARGV - 1
  while i < stop do
    local k = tonumber(ARGV[i + 1])
    stat_write(ARGV[i], i + 2, k, minute)
    i = i + 2 + 2 * k
  end
end

-- Add attempts the sweep settled to a name's minute: their worker died, so the worker's tally never counts them
-- and no run time is known. Each is settled and failed, then retried (back in its lane) or dead.
local function stat_add(name, minute, retried, dead)
  local n = retried + dead
  local key = ns .. 'jstat:m' .. minute .. ':' .. name
  local r = redis.call('BITFIELD', key, 'INCRBY', 'u32', '#0', n, 'INCRBY', 'u32', '#2', n, 'INCRBY', 'u32', '#3',
    retried, 'INCRBY', 'u32', '#4', dead)
  stat_born(key, name, minute, r[1], n)
end

-- The sweep's stalls of one call, counted by name ({retried, dead} each) and in the queue's total (name ''):
-- one BITFIELD a name, none when nothing stalled.
local function stat_stalls(stalls, now)
  local minute, retried, dead = math.floor(now / 60000), 0, 0
  for name, c in pairs(stalls) do
    stat_add(name, minute, c[1], c[2])
    retried, dead = retried + c[1], dead + c[2]
  end
  if retried + dead > 0 then stat_add('', minute, retried, dead) end
end
