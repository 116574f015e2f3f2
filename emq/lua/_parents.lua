--[[
  _parents: a parent in this queue of a job that waits (_flow.lua), and the states that settle one.
  Suffixes used here: job:<id>, flow:<id>
]]
--- @include "_checks"
--- @include "_clock"
--- @include "_record"
local SETTLED = {completed = true, dead = true, cancelled = true, failed = true}

-- A parent in this queue: a job, or a batch recorded here. Returns state, result JSON, reason,
-- is_batch; nil when neither exists. A batch's result is its summary.
local function parent_state(pid)
  local key = job_key(pid)
  local f = rec_try_fields(key, 'state', 'result', 'reason')
  if f.err then  -- the key holds no hash: dead as corrupt (_checks.lua), and so settled for its children
    unhashed(key, pid, f, now_ms())
    return 'dead', 'null', 'corrupt', false
  end
  if f[1] then return f[1], f[2] or 'null', f[3] or '', false end
  local b = redis.call('HMGET', ns .. 'flow:' .. pid, 'state', 'summary')
  if b[1] then return b[1], b[2] or 'null', '', true end
  return nil
end
