--[[
  _revive: resume a flow where it failed. A job retried after it died or was cancelled (admin_retry)
  is reopened: the jobs that died because of it (the "fallen" children its end told: chain steps,
  after= children, a batch's callbacks) wait for it again, a batch it counted for waits for it again,
  and so on down the flow, here or, for a job of another queue, through the relay (flow_relay's
  "revive"). A child that died because of another parent stays dead. Each reopening makes a new
  generation (gen) of the job or batch; a child or batch takes each generation's reopening once
  (rg:<parent id>), however often the relay repeats it (_flow.lua).
  Limit: a batch's record expires EMQ_RESULT_TTL after it settled; a retry after that resumes the
  member only, and the batch's callbacks stay dead.
  Suffixes used here: job:<id>, flow:<id>, deps:<id>, children:<id>, members:<id>, results:<id>, waiting, dead
]]
--- @include "_events"
--- @include "_flow"
--- @include "_record"
local REVIVE_ADD = 1000  -- ids one SADD takes at most (unpack's limit is near 8,000)

local reopen  -- defined last: reopen a job (its children, its batch) and what that revives in turn

-- SADD a list of members, a slice at a time.
local function sadd_all(set, list)
  for i = 1, #list, REVIVE_ADD do
    redis.call('SADD', set, unpack(list, i, math.min(i + REVIVE_ADD - 1, #list)))
  end
end

-- A child in this queue that died because of pid waits for it again (and for what it still waited for).
local function revive(cid, pid, gen, now)
  local key = job_key(cid)
  local f = rec_fields(key, 'state', 'died_of', 'held_by', 'rg:' .. pid)
  if not f[1] or (f[4] and tonumber(f[4]) >= gen) then return end
  rec_set(key, 'rg:' .. pid, gen)
  if f[1] ~= 'dead' or f[2] ~= pid then return end
  local deps = f[3] and cjson.decode(f[3]) or {}
  deps[#deps + 1] = pid
  sadd_all(ns .. 'deps:' .. cid, deps)
  redis.call('ZREM', ns .. 'dead', cid)
  redis.call('ZADD', ns .. 'waiting', now, cid)
  rec_set(key, 'state', 'waiting')
  rec_unset(key, 'died_of', 'held_by', 'finished', 'reason', 'error')
  emit('waiting', cid, pid)
  reopen(cid, 'dead', now)
end

-- The children id's failed end told (listed on holder, its hash or record) are its children again,
-- and each one it killed is revived: here, or in its queue through the relay. record: holder is id's record.
local function reopen_children(id, holder, record, gen, now)
  local raw
  if record then raw = rec_get(holder, 'fallen') else raw = redis.call('HGET', holder, 'fallen') end
  if not raw then return end
  if record then rec_unset(holder, 'fallen') else redis.call('HDEL', holder, 'fallen') end
  local kids = cjson.decode(raw)
  sadd_all(ns .. 'children:' .. id, kids)
  for _, k in ipairs(kids) do
    local ref = cjson.decode(k)
    if ref[1] == '' then
      revive(ref[2], id, gen, now)
    else
      relay_out(ref[1], ref[2], id, 'revive', 'null', '', false, gen)
    end
  end
end

-- A member of a batch recorded here was reopened (it had ended prev: dead or cancelled): its end no
-- longer counts, and a batch that had settled waits again, with the callbacks it killed.
local function batch_reopen(bid, mid, prev, gen, now)
  local bkey = ns .. 'flow:' .. bid
  local f = redis.call('HMGET', bkey, 'state', 'rg:' .. mid, 'gen', 'first')
  if not f[1] or (f[2] and tonumber(f[2]) >= gen) then return end
  redis.call('HSET', bkey, 'rg:' .. mid, gen)
  if redis.call('SADD', ns .. 'deps:' .. bid, mid) == 0 then return end  -- its end was not counted yet
  redis.call('HINCRBY', bkey, prev == 'cancelled' and 'cancelled' or 'dead', -1)
  if f[4] and string.sub(f[4], 1, #mid + 1) == mid .. ' ' then redis.call('HDEL', bkey, 'first') end
  if f[1] == 'waiting' then return end
  local bgen = tonumber(f[3] or '0') + 1
  redis.call('HSET', bkey, 'state', 'waiting', 'gen', bgen)
  redis.call('HDEL', bkey, 'finished', 'summary', 'error')
  redis.call('PERSIST', bkey)
  redis.call('PERSIST', ns .. 'members:' .. bid)
  redis.call('PERSIST', ns .. 'results:' .. bid)
  emit('batch', bid, 'waiting')
  reopen_children(bid, bkey, false, bgen, now)
end

-- Reopen one job that ended prev (dead or cancelled) and is back: a new generation, its fallen
-- children, its batch.
local function reopen_job(id, prev, now)
  local key = job_key(id)
  local f = rec_fields(key, 'batch', 'flow', 'gen')
  local gen = tonumber(f[3] or '0') + 1
  rec_set(key, 'gen', gen)
  reopen_children(id, key, true, gen, now)
  if f[1] == 'L' then
    batch_reopen(cjson.decode(f[2])[2], id, prev, gen, now)
  elseif f[1] then  -- R or RC: the batch is recorded in another queue
    local ref = cjson.decode(f[2])
    relay_out(ref[1], ref[2], id, 'revive', 'null', prev, true, gen)
  end
end

-- A worklist, so a chain of a thousand dead steps in one queue never recurses a thousand deep.
local reopen_list, reopening = {}, false
reopen = function(id, prev, now)
  reopen_list[#reopen_list + 1] = {id, prev}
  if reopening then return end
  reopening = true
  local i = 1
  while i <= #reopen_list do
    reopen_job(reopen_list[i][1], reopen_list[i][2], now)
    i = i + 1
  end
  reopen_list, reopening = {}, false
end
