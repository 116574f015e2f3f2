--[[
  _unknown: the jobs held because a worker that claimed them did not know their name (a rolling deploy).
  Suffixes used here: unknown, job:<id>
]]
--- @include "_record"
-- The queue's unknown hash counts the jobs given back because a worker that claimed them did not know their
-- name (finish.lua's unknown outcome), name -> "<jobs>,<server ms of the first>"; each such job carries that
-- ms in its unknown field. on = true marks and counts one; false (a worker knew the name, or the job ended:
-- finished, cancelled, deleted) unmarks and counts it out. A name with no job left leaves.
local function unknown_mark(key, name, now, on)
  local jobs, first = string.match(redis.call('HGET', ns .. 'unknown', name) or '', '^(%d+),(%d+)$')
  jobs = (tonumber(jobs) or 0) + (on and 1 or -1)
  if on then rec_set(key, 'unknown', now) else rec_unset(key, 'unknown') end
  if jobs > 0 then
    redis.call('HSET', ns .. 'unknown', name, jobs .. ',' .. (first or now))
  else
    redis.call('HDEL', ns .. 'unknown', name)
  end
end
