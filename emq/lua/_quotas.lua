--[[
  _quotas: tenant quotas. A quota bounds the jobs not yet finished (scheduled, waiting, ready or
  active) of one group, of each group ("*"), or of the whole queue (""): a mint past it is refused
  in the mint script, before anything of that job is written. O(1) a job: the quotas read once a
  call per group, then one HINCRBY for each quota that bounds the job (given back if it is over).
  Only a queue with quotas pays: the mint learns whether it has any with the flags it reads anyway
  (_mint.lua's mint_flags: the quotas hash exists), and counts each job it mints then in what bounds
  it, its group's count ("g") and the queue's ("q"), marking it with what it counts in (its field
  "quota" = "<g|q|gq>|<group>") and with notify "q" (a flow makes it 1), the field every end reads
  already: its end
  (finish, cancel, the sweep, a flow giving up, a delete) reaches _flow.lua's flow_finished, which
  gives the count back and drops the mark (_quota_end.lua), as a quarantine does (_checks.lua), so a job
  counts once however it ends, and the end of a job no quota counts reads nothing more. A job
  minted before the queue's first quota is not counted, in either direction.
  Suffixes used here: quotas (hash: group | "*" | "" -> max; it exists while the queue has a quota),
  queued (hash: group | "" -> jobs counted and not finished)
]]
local QUOTA = nil  -- this call's: false = the queue has no quota; else group -> its max, [''] the queue's (false: none)

-- Count one more unfinished job of group in each quota that bounds it (its own, "*"'s when it has none,
-- the queue's ""): returns the job's mark ("<g|q|gq>|<group>", nil when none bounds it), or nil and the
-- refusal {group, max} ("" for the queue's) when one is full, counting nothing then. refuse = false
-- counts past a full one: a flow's or a recurrence's job. The quotas are read once a call per group;
-- counting is an HINCRBY whose answer is the check (taken back when over): no read before it.
local function quota_take(group, refuse)
  local mine, all = QUOTA[group], QUOTA['']
  if mine == nil then
    local f = redis.call('HMGET', ns .. 'quotas', group, '*', '')
    mine, all = tonumber(f[1] or f[2] or '') or false, tonumber(f[3] or '') or false
    QUOTA[group], QUOTA[''] = mine, all
  end
  local queued = ns .. 'queued'
  local kinds = ''
  for _, q in ipairs({{group, mine, 'g'}, {'', all, 'q'}}) do
    if q[2] then
      if redis.call('HINCRBY', queued, q[1], 1) > q[2] and refuse ~= false then
        if kinds == 'g' then redis.call('HINCRBY', queued, group, -1) end
        redis.call('HINCRBY', queued, q[1], -1)
        return nil, {q[1], q[2]}
      end
      kinds = kinds .. q[3]
    end
  end
  if kinds == '' then return nil end
  return kinds .. '|' .. group
end
