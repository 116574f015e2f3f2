--[[
  signal: deliver signal <name> to a job (emq.signal). Its payload is kept in the job's journal
  (@w:<name>, _journal.lua) for the job's ctx.wait_for(name), whether the wait was reached before
  or is reached after; a job waiting for it is made ready at its lane's head in the same call, and
  a parked worker woken. The first signal of a name counts: a second is refused, and so is one
  after the wait's timeout passed (the job's wait_for returned None, or will), or to a job that ended.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the job's id
  ARGV[2] name      the signal's name
  ARGV[3] payload   JSON
  ARGV[4] mark      "" when the payload is sealed, else the seal mark (emq/core/sealed.py's MARK): a job
                    whose call field starts with it is encrypted and takes no plain payload
  Derived: job:<id>, deps:<id>, waiting, scheduled, wake, and what _lanes.lua touches
  Returns: "ok" (the job took it) | "missing" | "sent" (a signal of this name came already) |
           "late" (the job's wait for it timed out) | the job's state when it had ended |
           "encrypted" (nothing written: send the payload sealed)
]]
--- @include "_clock"
--- @include "_events"
--- @include "_journal"
--- @include "_record"
--- @include "_suspend"
--- @include "_wake"
local id, name, payload = ARGV[1], ARGV[2], ARGV[3]
local key = job_key(id)
local f = rec_fields(key, 'state', 'group', 'waits', '@w:' .. name, '@t:' .. name)
local state = f[1]
if not state then return 'missing' end
if state == 'completed' or state == 'dead' or state == 'cancelled' then return state end
if f[4] then return 'sent' end
local now = now_ms()
if f[5] and tonumber(f[5]) <= now then return 'late' end
local mark = ARGV[4]
if mark ~= '' and string.sub(rec_get(key, 'kwargs') or '', 1, #mark) == mark then return 'encrypted' end
journal_put(key, '@w:' .. name, payload, now)
if state == 'waiting' and f[3] == name and f[2] then  -- a job without its group (corrupt) is not half-moved
  redis.call('ZREM', ns .. 'scheduled', id)  -- the wait's deadline
  resume(key, id, f[2], now)
  wake('wake')
end
flush_events()
return 'ok'
