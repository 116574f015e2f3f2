--[[
  _defaults: the values a job's hash leaves out.
]]
-- The fields put_job leaves out of a job's hash while they hold these values, and due while it equals
-- created: a job minted with every default stores fn, state, group, lease, created and v. A job stores
-- its format in v (FORMAT; none: format '0', v0.2.0's), and a reader takes an absent field from the
-- defaults of the job's own format, defaults_of(v) (DEFAULT for a format this release does not know):
-- emq/core/stored.py writes down the rules and keeps the same tables for the Python readers (a test
-- compares them).
local FORMAT = '1'
local DEFAULT = {args = '[]', kwargs = '{}', attempts = '0', max_attempts = '3', max_stalled = '1',
  backoff = '1,300', timeout = '3600000,0'}
-- Format -> its defaults, made on first use (a mint reads none: each table made costs every call of a script).
-- Formats 0 and 1 share one; a format that changes a default adds its own table here.
local DEFAULTS = nil
local function defaults_of(v)
  if not DEFAULTS then DEFAULTS = {['0'] = DEFAULT, [FORMAT] = DEFAULT, ['2'] = DEFAULT} end
  return DEFAULTS[v or '0'] or DEFAULT
end
