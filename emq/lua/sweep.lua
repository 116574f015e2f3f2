--[[
  sweep: reclaim every lease expired on the server clock, up to a limit per call.
  An expired job goes back to the head of its lane for another attempt, or, once it has
  stalled more than max_stalled times, to the dead-letter set with reason "stalled".
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] limit     most leases to reclaim in this call
  Derived: leases, job:<id>, lane:<group>, ring, lanes, caps, active, dead, reclaims, wake, stats,
           jstat:m<minute>:<name>, jstat:names (a stall counted by name)
  Returns: {id, ...} the reclaimed ids
]]
--- @include "_clock"
--- @include "_events"
--- @include "_pump"
local reclaimed = reclaim_expired(now_ms(), tonumber(ARGV[1]))
flush_events()
return reclaimed
