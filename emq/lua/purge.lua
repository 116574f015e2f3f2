--[[
  purge: delete finished jobs (completed or dead) that finished at least an age ago, oldest first.
  The operator's bulk clean-up (`manage.py emq purge`); retention (retain.lua, on the Pump's
  schedule) trims completed jobs after EMQ_RESULT_TTL and dead ones after EMQ_DEAD_TTL anyway. Called again until nothing is left, a bounded slice per call.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] state     "completed" | "dead"
  ARGV[2] age_ms    only jobs finished at least this many ms ago on the server clock (0: all)
  ARGV[3] limit     most jobs deleted in this call, 0..1000 (0: only count them)
  Derived: done, dead, dead:classes, reclaims, job:<id>
  Returns: {deleted, left}   left = jobs of that state still past the age after this call
]]
--- @include "_classes"
--- @include "_clock"
--- @include "_record"
local zset = ns .. 'dead'
if ARGV[1] == 'completed' then zset = ns .. 'done' end
local cutoff = now_ms() - tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local deleted = 0
if limit > 0 then
  local ids = redis.call('ZRANGEBYSCORE', zset, '-inf', cutoff, 'LIMIT', 0, limit)
  if #ids > 0 then
    local victims = {}
    for i, id in ipairs(ids) do
      victims[i] = job_key(id)
      if ARGV[1] == 'dead' then class_tally(rec_get(job_key(id), 'error'), 0, -1) end
    end
    rec_delete(victims)
    redis.call('ZREM', zset, unpack(ids))
    redis.call('ZREM', ns .. 'reclaims', unpack(ids))
    deleted = #ids
  end
end
return {deleted, redis.call('ZCOUNT', zset, '-inf', cutoff)}
