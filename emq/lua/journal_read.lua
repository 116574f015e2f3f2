--[[
  journal_read: a durable job's journal (_journal.lua), read once a run, at its first ctx.step,
  sleep, wait_for, spawn or wait_children, by a run whose claim did not bring it (a context made by
  hand; a worker's claim brings it: bclaim.lua); with the server's clock, so a sleep or a wait whose
  time has passed is told on the server's clock (DESIGN rule 1).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] id        the job's id
  Derived: job:<id>
  Returns: {now_ms, then field, value per journal field ("@...")}
]]
--- @include "_clock"
--- @include "_journal"
--- @include "_record"
return journal_after(now_ms(), rec_all(job_key(ARGV[1])))
