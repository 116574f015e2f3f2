--[[
  mint_many: create a chunk of jobs of one function, all ready now: a bulk enqueue's common case, in
  less server time a job than mint.lua (what they share is sent and checked once a chunk, not once a
  job; one HSET a job, no table built for it; one RPUSH a lane at the end).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] n         number of jobs (1..1000)
  ARGV[2..11]       what every job of the chunk shares, as mint.lua's fields of the same names:
          fn, group ("" when each job brings its own), max_attempts, lease, max_stalled, backoff,
          origin, priority, meta, timeout
  ARGV[12] columns  the fields each job sends after its id, in this order: "a" args (JSON list), "k" kwargs
                    (JSON object), "g" its group (when ARGV[3] is ""); one left out holds its default for
                    every job of the chunk ("[]", "{}"): a bulk of jobs without keyword arguments sends none
  ARGV[13..]        per job: id, then the fields columns names
  No uniqueness spec and no caller-chosen id (if_absent "0": a job under an existing id is
  overwritten, as mint.lua's); the job's hash has the fields put_job writes for a job ready now.
  In a queue with quotas each job is counted, and one whose group (or the queue) is at its quota is
  not written (_quotas.lua); the others of the chunk are.
  Derived: job:<id>, lane:<group>, ring, ring:in, lanes, caps, active, paused:groups, prio, quotas, queued, plane:<group>,
           pseq, rhold, rout, counters, wake, stats, events
  Returns: {now_ms, created, then per job refused by a quota: its place in the chunk (1..n), group, max}
]]
--- @include "_clock"
--- @include "_defaults"
--- @include "_events"
--- @include "_lane_batch"
--- @include "_mint"
--- @include "_packed"
--- @include "_pending"
--- @include "_prio"
--- @include "_quotas"
--- @include "_ready_batch"
--- @include "_record"
--- @include "_stats"
--- @include "_wake"
local n = tonumber(ARGV[1])
local fn, shared_group, lease, priority = ARGV[2], ARGV[3], ARGV[5], tonumber(ARGV[9])
local own_groups = shared_group == ''  -- each job brings its group
local columns = ARGV[12]
local stride = #columns + 1
-- Where each field sits after a job's id (nil: left out).
local at_args, at_kwargs = string.find(columns, 'a', 1, true), string.find(columns, 'k', 1, true)
local at_group = string.find(columns, 'g', 1, true)
local now = now_ms()
tally_open()  -- a queue with no ready work yet starts exact counters (_counters.lua)
-- The fields every job of the chunk stores beyond fn, group, state, lease and created (put_job's rules).
local tail = {}
for name, at in pairs({max_attempts = 4, max_stalled = 6, backoff = 7, timeout = 11}) do
  if ARGV[at] ~= DEFAULT[name] then put(tail, name, ARGV[at]) end
end
if ARGV[8] ~= '' then put(tail, 'origin', ARGV[8]) end
if priority ~= 0 then put(tail, 'priority', priority) end
if ARGV[10] ~= '' then put(tail, 'meta', ARGV[10]) end
-- A job's own arguments go in front of the tail, in one of these tables made once a chunk: no table a job.
local with_args, with_kwargs = {'args', '', unpack(tail)}, {'kwargs', '', unpack(tail)}
local with_both = {'args', '', 'kwargs', '', unpack(tail)}
local push, flush_lanes = lane_batch()  -- ready ids, one RPUSH a group at the end (_lane_batch.lua)
mint_flags()  -- quotas, priorities and the wake token in one EXISTS (_mint.lua)
-- The common case: one group, in no priority mode, no priority: the ids go straight to one list.
local plain = not own_groups and priority == 0 and not prio_on(shared_group)
local ids, nids, refused = {}, 0, {}
-- Packed records (RECORD_FORMAT "2", _record.lua) built by concatenation, the chunk's shared fields packed once,
-- and written in one MSET at the end; a job whose values hold the separator is written as a hash.
local shared = RECORD_FORMAT == '2' and rec_clean(fn) and rec_clean(shared_group) and rec_rest(tail)
local fresh, nf = {}, 0
-- What every packed record of the chunk holds in front of its job's arguments, made once (its now's text once:
-- a number concatenated is a sprintf); with one group, its whole head too.
local own_head = shared and '\031fn\031' .. fn .. '\031created\031' .. num_text(now)
local marks = rec_marks({priority = priority ~= 0 and ARGV[9] or nil})  -- the one mark its shared fields may need
local front = shared and not own_groups and rec_fresh('ready', marks, shared_group, lease, own_head)

-- Write one job and queue its id (a plain chunk's ids go to its lane at the end).
-- The fields of a job written as a hash (rec_create): the chunk's tail behind the job's own arguments.
local function hash_fields(args, kwargs)
  local fields = tail
  if args ~= '[]' and kwargs ~= '{}' then
    fields = with_both
    fields[2], fields[4] = args, kwargs
  elseif args ~= '[]' then
    fields = with_args
    fields[2] = args
  elseif kwargs ~= '{}' then
    fields = with_kwargs
    fields[2] = kwargs
  end
  return fields
end

local function mint_job(id, args, kwargs, group, mark)
  -- An argument at its default is neither searched for SEP nor added; the record is one concatenation.
  local no_args, no_kwargs = args == '[]', kwargs == '{}'
  if shared and not mark and (not own_groups or rec_clean(group)) and (no_args or rec_clean(args))
      and (no_kwargs or rec_clean(kwargs)) then
    local head, s = front or rec_fresh('ready', marks, group, lease, own_head)
    if no_kwargs then
      s = no_args and head .. shared or head .. '\031args\031' .. args .. shared
    else
      s = head .. (no_args and '' or '\031args\031' .. args) .. '\031kwargs\031' .. kwargs .. shared
    end
    local key = job_key(id)
    if plain or priority == 0 and not prio_on(group) then
      fresh[nf + 1], fresh[nf + 2], nf = key, s, nf + 2
    else  -- its push reads its priority back (_prio.lua's prio_push): pending, where the owner's reads see it
      rec_put(key, s)
    end
  elseif mark then  -- counted: whoever ends it gives the count back (_quota_end.lua)
    rec_create(job_key(id), 'quota', mark, 'notify', 'q', 'fn', fn, 'group', group, 'state', 'ready',
      'lease', lease, 'created', now, 'v', FORMAT, unpack(hash_fields(args, kwargs)))
  else
    rec_create(job_key(id), 'fn', fn, 'group', group, 'state', 'ready', 'lease', lease, 'created', now,
      'v', FORMAT, unpack(hash_fields(args, kwargs)))
  end
  if plain then
    nids = nids + 1
    ids[nids] = id
  else
    if priority ~= 0 then prio_mark(group) end
    push(group, id, priority > 0)
  end
  if EVENTS_MAX > 0 then emit('minted', id, 'ready') end  -- the test inline: a Lua call a job saved
end

for b = 13, 12 + n * stride, stride do
  local group = at_group and ARGV[b + at_group] or shared_group
  local mark, full = nil, nil
  if QUOTA then mark, full = quota_take(group) end  -- _quotas.lua: the job's mark, or the refusal {group, max}
  if full then
    for _, v in ipairs({(b - 13) / stride + 1, full[1], full[2]}) do refused[#refused + 1] = v end
  else
    mint_job(ARGV[b], at_args and ARGV[b + at_args] or '[]', at_kwargs and ARGV[b + at_kwargs] or '{}', group, mark)
  end
end
rec_write_all(fresh)
rec_flush()
if plain then
  if #ids > 0 then lane_append(shared_group, ids) end
  ready_settle()
else
  flush_lanes()
end
local created = n - #refused / 3
count(now, 'minted', created)
if created > 0 then wake('wake') end
flush_events()
return {now, created, unpack(refused)}
