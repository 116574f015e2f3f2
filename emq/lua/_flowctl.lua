--[[
  _flowctl: flow control helpers (unique jobs, debounce, rate limits); scripts.py prepends it,
  after _prelude, only to the scripts that call one of its functions.
  Suffixes used here: unique:<key> (string: the id of the job that holds the key),
                      rates (hash: group | "*" | "" (whole queue) -> "<limit>,<per ms>"),
                      rlog:<group> / rlog: (zset: start ms of the jobs started in the last window),
                      rhold (zset: group | "" -> ms its hold ends), rout (set: held groups off the ring)
]]

-- Let a unique key go, if the job still holds it (a later mint may own it by now).
local function unique_free(id, spec)
  local key = ns .. 'unique:' .. string.sub(spec, 3)
  if redis.call('GET', key) == id then redis.call('DEL', key) end
end

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
