--[[
  _rates: rate limits, read and counted by bclaim.
  Suffixes used here: rates (hash: group | "*" | "" (whole queue) -> "<limit>,<per ms>"),
                      rlog:<group> / rlog: (zset: start ms of the jobs started in the last window)
]]
--- @include "_holds"
-- Rate limits: a sliding log per limited group (and "" for the whole queue) of the starts in the
-- last window, so "at most limit starts in any window of per ms" holds exactly on the server clock.
-- A group out of room is held (rhold) off the ring until its oldest start leaves the window; the
-- Pump's tick puts it back (rate_release), so no worker polls for it.
local RATES = {}  -- this call's reads of rates: group -> {limit, per ms} | false

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
-- write a group shows in a claim of many lone groups); rate_spec would read it again.
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

-- A claim found a group out of room and took it off the ring: it waits in rout, held until its
-- oldest start leaves the window (or longer, when a job asked for it).
local function rate_exhausted(group)
  if group ~= '' then redis.call('SADD', ns .. 'rout', group) end
  local c = rate_spec(group)
  if not c then return end
  local oldest = redis.call('ZRANGE', ns .. 'rlog:' .. group, 0, 0, 'WITHSCORES')
  if oldest[2] then rate_hold(group, tonumber(oldest[2]) + c[2]) end
end
