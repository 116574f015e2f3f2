--[[
  journal_put: write to a running job's journal under its attempt's token (DESIGN rule 12): a done
  step's result, a spawned child's reference, the children's results; or, before a child is
  spawned, its id into deps:<id>, the children the job will wait for (ctx.wait_children), which
  each child's end takes out (_flow.lua's settle: the job is marked "spawns"). Only the holder of
  the current token of an active job may write: a stale attempt's step is refused.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the job's id
  ARGV[2] token     the attempt's fencing token
  ARGV[3] field     "@<kind>:<name>" (_journal.lua), or "" to record nothing
  ARGV[4] json      the entry's JSON value
  ARGV[5] child     "" or the id of a child about to be spawned
  Derived: job:<id>, deps:<id>
  Returns: {status, value}  status = "ok", value the stored value (the first write's, when the field
           was there) | "cancelled" (the holder's job was cancelled: stop it) | "stale" (token not current
           or job not active) | "missing"; value "" unless ok
]]
--- @include "_clock"
--- @include "_journal"
--- @include "_record"
local id, token, field, json, child = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local key = job_key(id)
local f = rec_fields(key, 'state', 'attempts')
if not f[1] then return {'missing', ''} end
if f[2] ~= token then return {'stale', ''} end
if f[1] == 'cancelled' then return {'cancelled', ''} end
if f[1] ~= 'active' then return {'stale', ''} end
if child ~= '' then
  redis.call('SADD', ns .. 'deps:' .. id, child)
  rec_set(key, 'spawns', 1)
end
if field == '' then return {'ok', ''} end
return {'ok', journal_put(key, field, json, now_ms())}
