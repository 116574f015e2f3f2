--[[
  _unique: unique jobs and debounce, at mint time (_bury.lua's unique_free lets a key go).
  Suffixes used here: unique:<key> (string: the id of the job that holds the key), job:<id>
]]
--- @include "_mint"
--- @include "_record"
--- @include "_schedule"
-- A mint with a uniqueness spec in its if_absent field (ARGV[b + 2]):
--   "U<window ms>|<s|f>|<key>"  unique: at most one job per key in the window; frees at start / finish
--   "D<quiet ms>|<key>"         debounce: a waiting job of that key takes these args and waits again
-- Returns made 0|1, ready now, and the id of the job that stands for the call (or a quota's refusal).
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
    local jk = job_key(holder)
    -- A pcall: a holder whose key holds no hash answers an error table, neither state below (the
    -- claim quarantines it when it comes to it), and the call mints afresh.
    local state = rec_try_get(jk, 'state')
    if state == 'scheduled' then
      rec_set(jk, 'args', ARGV[b + 4], 'kwargs', ARGV[b + 5], 'due', now + ms)
      schedule(holder, now + ms)
      redis.call('PEXPIRE', key, ms + 3600000)
      return 0, false, holder
    elseif state == 'ready' then  -- due and waiting for a worker: it runs with the latest args
      rec_set(jk, 'args', ARGV[b + 4], 'kwargs', ARGV[b + 5])
      return 0, false, holder
    end
  end
  local id = ARGV[b + 1]
  local made, ready, refused = put_job(b, now, false, push)
  if made == 0 then return 0, false, refused or id end
  rec_set(job_key(id), 'unique', untl .. ':' .. ukey)
  -- A debounce key outlives its quiet period (an hour) so that a late call still finds its job.
  if kind == 'D' then ms = ms + 3600000 end
  redis.call('SET', key, id, 'PX', ms)
  return made, ready, id
end
