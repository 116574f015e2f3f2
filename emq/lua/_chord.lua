--[[
  _chord: a chord is a batch (_flow.lua) whose callback gets the list of its members' results, in
  member order, as its first argument (Celery's chord). Each member's result is kept on the chord's
  record as the member ends (results:<id>: its job may be trimmed before the last member ends);
  the last one builds the list, reading the results 1,000 at a time in member order (members:<id>)
  and joining them once: linear in their size. A list over the chord's limit (EMQ_MAX_PAYLOAD when
  it was minted) fails the chord instead: its callback ends dead with the reason.
  Suffixes used here: flow:<id>, members:<id>, results:<id>
]]
local CHORD_READ = 1000  -- member ids read (and results fetched) per step

-- A member of a chord ended: keep its result (completed), or name the first member that did not.
local function chord_keep(bid, mid, mstate, result)
  if mstate == 'completed' then
    redis.call('HSET', ns .. 'results:' .. bid, mid, result)
  else
    redis.call('HSETNX', ns .. 'flow:' .. bid, 'first', mid .. ' ' .. mstate)
  end
end

-- The members' results as one JSON list, in member order; nil and the bytes read so far once past limit.
local function chord_results(bid, limit)
  local members = ns .. 'members:' .. bid
  local results = ns .. 'results:' .. bid
  local parts, size = {}, 2
  for start = 0, redis.call('LLEN', members) - 1, CHORD_READ do
    local ids = {}
    for i, raw in ipairs(redis.call('LRANGE', members, start, start + CHORD_READ - 1)) do ids[i] = cjson.decode(raw)[2] end
    local got = redis.call('HMGET', results, unpack(ids))
    for i = 1, #ids do
      local r = got[i] or 'null'
      parts[#parts + 1] = r
      size = size + #r + 1
    end
    if size > limit then return nil, size end
  end
  return '[' .. table.concat(parts, ',') .. ']', size
end

-- What a settled chord tells its callback: state, the results list (or the summary) and the reason.
-- A failed chord keeps its results for a retry of the failed member (_revive.lua); a completed one hands
-- them on and drops them.
local function chord_told(bid, state, dead, cancelled, ttl)
  local bkey = ns .. 'flow:' .. bid
  local f = redis.call('HMGET', bkey, 'first', 'limit')
  if state ~= 'completed' then
    redis.call('PEXPIRE', ns .. 'results:' .. bid, ttl)
    local what = f[1] and ('member ' .. f[1]) or (dead .. ' dead, ' .. cancelled .. ' cancelled')
    return state, 'null', 'chord ' .. bid .. ' failed: ' .. what
  end
  local limit = tonumber(f[2] or '0')
  local list, size = chord_results(bid, limit)
  if not list then
    redis.call('PEXPIRE', ns .. 'results:' .. bid, ttl)
    local reason = 'chord ' .. bid .. ' failed: its results take over ' .. limit .. ' bytes (EMQ_MAX_PAYLOAD, '
      .. size .. ' read): return smaller results, e.g. where the data is rather than the data'
    redis.call('HSET', bkey, 'error', reason)
    return 'failed', 'null', reason
  end
  redis.call('DEL', ns .. 'results:' .. bid)
  return 'completed', list, ''
end
