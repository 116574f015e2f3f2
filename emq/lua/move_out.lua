--[[
  move_out: take jobs out of this queue once a move has minted each of them in another queue (same id), each
  only while it is still in the state the mover read: a job that moved on meanwhile (it came due and was
  claimed, was retried, ...) stays here, its state is answered, and the mover takes its copy back. The job
  leaves its set (a ready one its lane, as cancel.lua takes it) and its hash is deleted; a unique key it
  held is freed, and a dead one leaves its error class's count.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[2i-1] id     a job id; ARGV[2i] the state the mover read: scheduled | ready | completed | dead | cancelled
                    (1..1000 pairs)
  Derived: job:<id>, scheduled, done, dead, dead:classes, cancelled, reclaims, lane:<group>, solo, prio,
           plane:<group>, counters, recount:seen, lanes, unique:<key>, unknown
  Returns: {status_1, ...}   status = "ok" | "missing" | the job's state when it is not the one read
]]
--- @include "_bury"
--- @include "_classes"
--- @include "_clock"
--- @include "_counters"
--- @include "_prio_take"
--- @include "_record"
--- @include "_serving"
--- @include "_unknown"
local SETS = {scheduled = 'scheduled', completed = 'done', dead = 'dead', cancelled = 'cancelled'}
local out, now = {}, nil

-- Take a ready id out of its lane (cancel.lua's way): an emptied lane leaves the lane set at once and the
-- ring when a claim comes round to it.
local function unlane(id, group)
  local left
  if redis.call('HGET', ns .. 'solo', group) == id then
    left = redis.call('HDEL', ns .. 'solo', group)
  else
    left = prio_unlane(group, id)
  end
  ready_add(group, -left)
  if not lane_exists(group) then redis.call('SREM', ns .. 'lanes', group) end
end

for i = 1, #ARGV, 2 do
  local id, read = ARGV[i], ARGV[i + 1]
  local key = job_key(id)
  local f = rec_fields(key, 'state', 'group', 'unique', 'unknown', 'fn', 'error')
  if not f[1] then
    out[#out + 1] = 'missing'
  elseif f[1] ~= read or (read ~= 'ready' and not SETS[read]) then
    out[#out + 1] = f[1]
  else
    if read == 'ready' then unlane(id, f[2]) else redis.call('ZREM', ns .. SETS[read], id) end
    if read == 'dead' then class_tally(f[6], 0, -1) end
    if f[3] then unique_free(id, f[3]) end
    if f[4] then
      now = now or now_ms()
      unknown_mark(key, f[5], now, false)
    end
    redis.call('ZREM', ns .. 'reclaims', id)
    rec_delete({key})
    out[#out + 1] = 'ok'
  end
end
return out
