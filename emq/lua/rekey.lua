--[[
  rekey: write the fields of encrypted jobs sealed again with the newest key (manage.py emq rekey),
  each only while it still holds the value that was read: a field a worker, a mint or a debounce
  wrote meanwhile (sealed with the key it had) is left as it is, and a job gone or not a hash is
  skipped. Idempotent: a field already rewritten no longer holds the old value.
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV    4 per item: id, field ("kwargs", "result", "error", "progress_note" or "errors"),
          the value read (sealed with an older key), the value to write (sealed with the newest)
  Derived: job:<id>
  Returns: {written, moved}   items written; items whose field no longer held the value read
]]
--- @include "_record"
local written, moved = 0, 0
for i = 1, #ARGV, 4 do
  local key = job_key(ARGV[i])
  if not rec_foreign(key) and rec_get(key, ARGV[i + 1]) == ARGV[i + 2] then
    rec_set(key, ARGV[i + 1], ARGV[i + 3])
    written = written + 1
  else
    moved = moved + 1
  end
end
return {written, moved}
