--[[
  _bury: a job ends dead: the dead-letter set and its error class's count, and its unique key freed at once.
  Suffixes used here: dead, unique:<key>, job:<id>
]]
--- @include "_classes"
--- @include "_record"
-- Let a unique key go, if the job still holds it (a later mint may own it by now); spec is the
-- job's "unique" field, "<s|f>|<key>" (_unique.lua's unique_mint writes it).
local function unique_free(id, spec)
  local key = ns .. 'unique:' .. string.sub(spec, 3)
  if redis.call('GET', key) == id then redis.call('DEL', key) end
end

-- Move a job to the dead-letter set. However it dies (failed, stalled, corrupt, a flow's parent
-- failed), its unique key frees at once rather than when its window ends.
local function bury(key, id, now, error_text, reason)
  local spec = rec_get(key, 'unique')
  rec_set(key, 'state', 'dead', 'error', error_text, 'finished', now, 'reason', reason)
  redis.call('ZADD', ns .. 'dead', now, id)
  class_tally(error_text, now, 1)
  if spec then unique_free(id, spec) end
end
