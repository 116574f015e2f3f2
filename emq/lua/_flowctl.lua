--[[
  _flowctl: flow control helpers (unique jobs, debounce, rate limits); scripts.py prepends it,
  after _prelude, only to the scripts that call one of its functions.
  Suffixes used here: unique:<key> (string: the id of the job that holds the key; freed by
                                     _prelude's unique_free),
                      rates (hash: group | "*" | "" (whole queue) -> "<limit>,<per ms>"),
                      rlog:<group> / rlog: (zset: start ms of the jobs started in the last window),
                      rhold (zset: group | "" -> ms its hold ends), rout (set: held groups off the ring)
]]

-- A mint with a uniqueness spec in its if_absent field (ARGV[b + 2]):
--   "U<window ms>|<s|f>|<key>"  unique: at most one job per key in the window; frees at start / finish
--   "D<quiet ms>|<key>"         debounce: a waiting job of that key takes these args and waits again
-- Returns made 0|1, ready now, and the id of the job that stands for the call.
local function unique_mint(b, now, push)
  local spec = ARGV[b + 2]
  local kind, ms, rest = string.match(spec, '^(%u)(%d+)|(.*)$')
  ms = tonumber(ms)
  local untl, ukey = 's', rest
  if kind == 'U' then untl, ukey = string.sub(rest, 1, 1), string.sub(rest, 3) end
  local key = ns .. 'unique:' .. ukey
  local holder = redis.call('GET', key)
  if holder and kind == 'U' then return 0, false, holder end
  if holder then
    local jk = ns .. 'job:' .. holder
    local state = redis.call('HGET', jk, 'state')
    if state == 'scheduled' then
      redis.call('HSET', jk, 'args', ARGV[b + 4], 'kwargs', ARGV[b + 5], 'due', now + ms)
      schedule(holder, now + ms)
      redis.call('PEXPIRE', key, ms + 3600000)
      return 0, false, holder
    elseif state == 'ready' then  -- due and waiting for a worker: it runs with the latest args
      redis.call('HSET', jk, 'args', ARGV[b + 4], 'kwargs', ARGV[b + 5])
      return 0, false, holder
    end
  end
  local id = ARGV[b + 1]
  local made, ready = put_job(b, now, false, push)
  if made == 0 then return 0, false, id end
  redis.call('HSET', ns .. 'job:' .. id, 'unique', untl .. ':' .. ukey)
  -- A debounce key outlives its quiet period (an hour) so that a late call still finds its job.
  if kind == 'D' then ms = ms + 3600000 end
  redis.call('SET', key, id, 'PX', ms)
  return made, ready, id
end

-- Rate limits: a sliding log per limited group (and "" for the whole queue) of the starts in the
-- last window, so "at most limit starts in any window of per ms" holds exactly on the server clock.
-- A group out of room is held (rhold) off the ring until its oldest start leaves the window; the
-- Pump's tick puts it back (rate_release), so no worker polls for it.
local RATES = {}  -- this call's reads of rates: group -> {limit, per ms} | false
local HOLDS = nil  -- whether the queue has a hold (read once a call)

local HOLDAT = {}  -- this call's reads of rhold: group -> ms its hold ends | false (rate_prefetch)

-- A limit as stored ("<limit>,<per ms>"), or the "*" limit for a group without its own.
local function rate_parse(group, s)
  if not s and group ~= '' then
    if RATES['*'] == nil then RATES['*'] = redis.call('HGET', ns .. 'rates', '*') or false end
    s = RATES['*']
  end
  if not s then return false end
  local limit, per = string.match(s, '^(%d+),(%d+)$')
  return {tonumber(limit), tonumber(per)}
end

local function rate_spec(group)
  local c = RATES[group]
  if c ~= nil then return c end
  c = rate_parse(group, redis.call('HGET', ns .. 'rates', group))
  RATES[group] = c
  return c
end

-- A claim about to visit these groups reads their limits and holds with one command each, not one a group.
-- Numeric loops, not ipairs (a call a step), and the "*" limit parsed once for the groups without their own.
-- Only the groups with a limit (their own or "*") are remembered unless every is true: a group of the
-- chunk that RATES lacks has none, which bclaim's plain turn and rate_note take as read (a table
-- write a group of 100,000 lone groups cost ~0.7 % of a claim); rate_spec would read it again.
local function rate_prefetch(groups, every)
  if HOLDS == nil then HOLDS = redis.call('EXISTS', ns .. 'rhold') == 1 end
  if HOLDS then
    local at = redis.call('ZMSCORE', ns .. 'rhold', unpack(groups))
    for i = 1, #groups do HOLDAT[groups[i]] = at[i] or false end
  end
  local specs = redis.call('HMGET', ns .. 'rates', unpack(groups))
  local star
  for i = 1, #groups do
    local group, s = groups[i], specs[i]
    if RATES[group] == nil then
      if s then
        RATES[group] = rate_parse(group, s)
      else
        if star == nil then star = rate_parse(group, nil) end
        if star or every then RATES[group] = star end
      end
    end
  end
end

-- How many more jobs of a group ("" the whole queue) may start now: nil without a limit, <= 0 when
-- held (its window is full, or a job raised RateLimited). A hold past its end (the Pump is late) ends here.
local function rate_room(group, now)
  if HOLDS == nil then HOLDS = redis.call('EXISTS', ns .. 'rhold') == 1 end
  local h = HOLDS and HOLDAT[group]
  if h == nil then h = redis.call('ZSCORE', ns .. 'rhold', group) end
  if h then
    if tonumber(h) > now then return 0 end
    redis.call('ZREM', ns .. 'rhold', group)
    redis.call('SREM', ns .. 'rout', group)
    HOLDAT[group] = false
  end
  local c = rate_spec(group)
  if not c then return nil end
  local log = ns .. 'rlog:' .. group
  redis.call('ZREMRANGEBYSCORE', log, '-inf', now - c[2])
  return c[1] - redis.call('ZCARD', log)
end

-- A job of group started (member of the logs: id:token, unique per attempt); counted for the group
-- and the queue, where they have a limit. A start that no limit counts costs no string and no table.
local function rate_log(g, c, member, now)
  redis.call('ZADD', ns .. 'rlog:' .. g, now, member)
  redis.call('PEXPIRE', ns .. 'rlog:' .. g, c[2])
end
-- Only bclaim calls it, for a group its prefetch or rate_room read and after rate_room('') read the queue's.
local function rate_note(group, id, token, now)
  local mine, queue = RATES[group], RATES['']
  if not (mine or queue) then return end
  local member = id .. ':' .. token
  if mine then rate_log(group, mine, member, now) end
  if queue then rate_log('', queue, member, now) end
end

-- Hold a group ("" the whole queue) until ms at least; wake the Pump when that is before its next tick.
local function rate_hold(group, untl)
  local cur = redis.call('ZSCORE', ns .. 'rhold', group)
  if cur and tonumber(cur) >= untl then return end
  redis.call('ZADD', ns .. 'rhold', untl, group)
  HOLDS, RHOLD, HOLDAT[group] = true, true, untl
  if untl < tonumber(redis.call('GET', ns .. 'pumpnext') or '0') then wake('pumpwake') end
end

-- A claim found a group out of room and took it off the ring: it waits in rout, held until its
-- oldest start leaves the window (or longer, when a job asked for it).
local function rate_exhausted(group)
  if group ~= '' then redis.call('SADD', ns .. 'rout', group) end
  local c = rate_spec(group)
  if not c then return end
  local oldest = redis.call('ZRANGE', ns .. 'rlog:' .. group, 0, 0, 'WITHSCORES')
  if oldest[2] then rate_hold(group, tonumber(oldest[2]) + c[2]) end
end

-- The Pump's tick: end the holds due by now; a group that left the ring for its hold rejoins it.
local function rate_release(now, limit)
  local due = redis.call('ZRANGEBYSCORE', ns .. 'rhold', '-inf', now, 'LIMIT', 0, limit)
  local woke = false
  for _, group in ipairs(due) do
    redis.call('ZREM', ns .. 'rhold', group)
    HOLDAT[group] = false
    if group == '' then
      woke = true
    elseif redis.call('SREM', ns .. 'rout', group) == 1 and lane_exists(group)
        and not off_ring(group) then
      ring_join(group)  -- _counters.lua: the ring's membership set
      woke = true
    end
  end
  if woke then wake('wake') end
  return #due
end

-- A job raised RateLimited(retry_in): back to the head of its lane without spending the attempt
-- (its token is given back), and its whole group held for retry_ms.
local function rate_limited(key, id, f, retry_ms, now)
  rate_hold(f[4], now + math.max(retry_ms, 1))
  redis.call('HSET', key, 'state', 'ready', 'attempts', math.max(tonumber(f[2]) - 1, 0), 'due', now)
  lane_push(f[4], id, true)
  emit('ready', id)
  return 'ready'
end
