--[[
  repeat_mint: mint a recurrence's due occurrences and move its next time, by compare-and-set.
  Nothing happens unless repeat:next still holds the expected time and the definition still has
  the expected schedule key: of two Pumps that read the same state, only the first mints. Each
  job id is derived from (recurrence, occurrence instant) and created only if absent.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] name      recurrence name
  ARGV[2] expected  ms the caller read from repeat:next (0 when arming)
  ARGV[3] key       schedule key the caller planned with
  ARGV[4] next      ms of the next occurrence after the ones minted here
  ARGV[5] last      ms of the newest occurrence minted here, or "" when none
  ARGV[6] skipped   missed occurrences dropped by the recurrence's policy (counted in stats)
  ARGV[7] n         jobs to mint; then 15 fields per job, as in mint (if_absent is forced on)
  Derived: repeat, repeat:next, repeat:last, plus what mint touches
  Returns: {now_ms, created_1, ..., created_n}; {now_ms, -1} when the compare-and-set lost
]]
--- @include "_clock"
--- @include "_events"
--- @include "_lanes"
--- @include "_mint"
--- @include "_stats"
--- @include "_wake"
local name, expected, plan = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
local def = redis.call('HGET', ns .. 'repeat', name)
local score = redis.call('ZSCORE', ns .. 'repeat:next', name)
local ok, parsed = pcall(cjson.decode, def or '')
if not ok or type(parsed) ~= 'table' or not score or tonumber(score) ~= expected or parsed.key ~= plan then
  return {now, -1}
end
local out = {now}
local created, ready = 0, 0
for i = 0, tonumber(ARGV[7]) - 1 do
  local made, now_ready = put_job(7 + i * JOB_FIELDS, now, true, lane_push, false)  -- a quota counts, never refuses
  created = created + made
  if now_ready then ready = ready + 1 end
  out[#out + 1] = made
  if made == 1 then emit('minted', ARGV[8 + i * JOB_FIELDS], now_ready and 'ready' or 'scheduled') end
end
redis.call('ZADD', ns .. 'repeat:next', ARGV[4], name)
if ARGV[5] ~= '' then redis.call('HSET', ns .. 'repeat:last', name, ARGV[5]) end
count(now, 'minted', created)
count(now, 'repeat_skipped', tonumber(ARGV[6]))
if ready > 0 then wake('wake') end
flush_events()
return out
