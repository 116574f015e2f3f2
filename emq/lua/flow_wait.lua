--[[
  flow_wait: register a caller of ref.wait(): the job's end (or a batch's) will push a token
  on finished:<id>, which the caller pops with a blocking pop; a job that has settled already
  is answered at once. A token left from an earlier end (a job retried since) is dropped.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        a job, or a batch recorded in this queue
  ARGV[2] ttl       ms the token is kept once pushed
  Derived: job:<id>, flow:<id>, finished:<id>
  Returns: the state: settled (completed, dead, cancelled; a batch: completed, failed) answers at
           once; any other state means the caller is registered; "missing" when neither exists
]]
--- @include "_parents"
--- @include "_record"
local id, ttl = ARGV[1], ARGV[2]
local state, _, _, is_batch = parent_state(id)
if not state then return 'missing' end
if SETTLED[state] then return state end
redis.call('DEL', ns .. 'finished:' .. id)
if is_batch then
  redis.call('HSET', ns .. 'flow:' .. id, 'waited', ttl)
else
  rec_set(job_key(id), 'waited', ttl, 'notify', 1)
end
return state
