--[[
  stats_roll: roll the statistics per job name of the last two ten-minute windows (the one that ends now and
  the one before) out of their minute windows into ten-minute windows kept 7 days, on the Pump's schedule
  (emq/runtime/upkeep.py); a name no finish wrote for 7 days leaves the list. Each window is computed afresh
  from its minutes and set whole, so a roll run twice, or by two Pumps, writes the same thing.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] limit     most names rolled in this call (1..1000)
  ARGV[2] after     names of this round rolled by earlier calls (0: a new round)
  Derived: jstat:names, jstat:m<minute>:<name>, jstat:t<window>:<name>
  Returns: {rolled, next}   rolled = names this call rolled; next = ARGV[2] of the next call of this round,
           or -1 once the round is done (-2: no name had statistics in the last 20 minutes, nothing to roll;
           names older than 7 days are trimmed only when some name has, so a quiet queue costs one read)
  A window's slots are the minute windows' (_jobstats.lua): their sum, the maxima (slots 5, 6) their maximum,
  written up to the last slot that is not 0. It expires 7 days after it ends.
]]
--- @include "_clock"
local limit, after = tonumber(ARGV[1]), tonumber(ARGV[2])
local minute = math.floor(now_ms() / 60000)
local window = math.floor(minute / 10)
local names = ns .. 'jstat:names'

-- Add one window string's slots (big-endian u32) into sums.
local function add(sums, s)
  local b = {string.byte(s, 1, -1)}
  for i = 0, #b / 4 - 1 do
    local v = ((b[4 * i + 1] * 256 + b[4 * i + 2]) * 256 + b[4 * i + 3]) * 256 + b[4 * i + 4]
    if i == 5 or i == 6 then
      if v > (sums[i] or 0) then sums[i] = v end
    elseif v > 0 then
      sums[i] = (sums[i] or 0) + v
    end
  end
end

-- The string of slots 0..last of sums.
local function encode(sums, last)
  local out = {}
  for i = 0, last do
    local v = sums[i] or 0
    out[i + 1] = string.char(math.floor(v / 16777216) % 256, math.floor(v / 65536) % 256, math.floor(v / 256) % 256,
      v % 256)
  end
  return table.concat(out)
end

-- Roll one name's window w from its ten minutes (nothing when none of them holds anything).
local function roll(name, w)
  local minutes = {}
  for i = 0, 9 do minutes[i + 1] = ns .. 'jstat:m' .. (w * 10 + i) .. ':' .. name end
  local sums, last = {}, -1
  for _, s in ipairs(redis.call('MGET', unpack(minutes))) do
    if s then add(sums, s) end
  end
  for i, _ in pairs(sums) do
    if i > last then last = i end
  end
  if last < 0 then return end
  redis.call('SET', ns .. 'jstat:t' .. w .. ':' .. name, encode(sums, last), 'PXAT', (w + 1) * 600000 + 604800000)
end

local active = redis.call('ZRANGEBYSCORE', names, (window - 1) * 10, '+inf', 'LIMIT', after, limit)
if #active == 0 and after == 0 then return {0, -2} end
if after == 0 then redis.call('ZREMRANGEBYSCORE', names, '-inf', minute - 7 * 1440 - 10) end
for _, name in ipairs(active) do
  roll(name, window - 1)
  roll(name, window)
end
return {#active, #active < limit and -1 or after + #active}
