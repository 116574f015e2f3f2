--[[
  journal_read: a durable job's journal (_journal.lua), read once a run, at its first ctx.step,
  sleep, wait_for, spawn or wait_children, by a run whose claim did not bring it (a worker's claim
  does: bclaim.lua, _journal.lua's journal_item); with the server's clock, so a sleep or a wait whose time
  has passed is told on the server's clock (DESIGN rule 1).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the job's id
  Derived: job:<id>
  Returns: {now_ms, state ("" when there is no such job), then field, value per journal field ("@...")}
]]
--- @include "_clock"
local all = redis.call('HGETALL', ns .. 'job:' .. ARGV[1])
local out = {now_ms(), ''}
for i = 1, #all, 2 do
  local field = all[i]
  if field == 'state' then
    out[2] = all[i + 1]
  elseif string.byte(field, 1) == 64 then  -- "@": a journal field
    out[#out + 1] = field
    out[#out + 1] = all[i + 1]
  end
end
return out
