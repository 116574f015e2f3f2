--[[
  progress: store how far running jobs are (ctx.progress), fenced like a lease renewal; the
  worker sends it in the round trip of its renewal, at most once a second per job.
  KEYS[1] ns        <prefix>:{<queue>}:
  then 4 fields per item: id, token, fraction (0..1), note ("" for none)
  A job whose key holds no hash answers missing and ends dead as corrupt (_checks.lua), its lease with it.
  Derived: job:<id>, leases, held, active, caps, dead, stats
  Returns: {status_1, ...}   status = "ok" | "stale" (token not current or job not active) | "missing"
]]
--- @include "_checks"
--- @include "_clock"
--- @include "_events"
--- @include "_held"
--- @include "_record"
local now = now_ms()
local out = {}
for i = 1, #ARGV, 4 do
  local id, token, fraction, note = ARGV[i], ARGV[i + 1], ARGV[i + 2], ARGV[i + 3]
  local key = job_key(id)
  local f = rec_try_fields(key, 'state', 'attempts')
  if f.err then  -- the key holds no hash: the job ends dead as corrupt (_checks.lua), its lease with it
    leases_end({id})
    unhashed(key, id, f, now)
    out[#out + 1] = 'missing'
  elseif not f[1] then
    out[#out + 1] = 'missing'
  elseif f[1] ~= 'active' or f[2] ~= token then
    out[#out + 1] = 'stale'
  else
    rec_set(key, 'progress', fraction, 'progress_note', note, 'progress_at', now)
    emit('progress', id, tonumber(fraction), note)
    out[#out + 1] = 'ok'
  end
end
flush_events()
return out
