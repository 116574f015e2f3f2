--[[
  flow_link: record, on the parents' queue, jobs of another queue that wait for them; a parent
  that has settled already is answered instead (the caller relays its outcome, flow_relay).
  The child is minted (waiting) before this runs, so an outcome can never reach it too early.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] queue     the children's (physical) queue
  then 2 fields per item: parent id (a job, or a batch recorded here), child id
  Derived: job:<id>, flow:<id>, children:<id>
  Returns: {state_1, result_1, reason_1, ...} per item: "pending" (linked) | "missing" |
           the settled state (completed, dead, cancelled; a batch: completed, failed) with the
           parent's result JSON (a batch's summary) and its reason
]]
--- @include "_parents"
--- @include "_record"
local queue = ARGV[1]
local out = {}
for i = 2, #ARGV, 2 do
  local pid, cid = ARGV[i], ARGV[i + 1]
  local state, result, reason, is_batch = parent_state(pid)
  if not state then
    for _, v in ipairs({'missing', 'null', ''}) do out[#out + 1] = v end
  elseif SETTLED[state] then
    for _, v in ipairs({state, result, reason}) do out[#out + 1] = v end
  else
    redis.call('SADD', ns .. 'children:' .. pid, cjson.encode({queue, cid}))
    if not is_batch then rec_set(job_key(pid), 'notify', 1) end
    for _, v in ipairs({'pending', '', ''}) do out[#out + 1] = v end
  end
end
return out
