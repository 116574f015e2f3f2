--[[
  _quota_end: a job a quota counts (_quotas.lua) ended or left: the counts it is in drop.
  Suffixes used here: queued, job:<id>
]]
--- @include "_record"
-- The job at key, marked "<g|q|gq>|<group>", counts no more: its group's count ("g") and the queue's
-- ("q") drop, and the mark goes, so it is given back once however many scripts see it end.
local function quota_end(key, mark)
  local kinds, group = string.match(mark, '^(%a*)|(.*)$')
  for _, q in ipairs({{'g', group}, {'q', ''}}) do
    if kinds and string.find(kinds, q[1], 1, true) and redis.call('HINCRBY', ns .. 'queued', q[2], -1) <= 0 then
      redis.call('HDEL', ns .. 'queued', q[2])
    end
  end
  rec_unset(key, 'quota')
end
