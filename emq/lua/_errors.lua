--[[
  _errors: a failed attempt's error text and the job's bounded history of them.
  Suffixes used here: job:<id>
]]
--- @include "_record"
-- Append one attempt's error line and its worker to the job's bounded history (newest last, at most 10).
local function note_error(key, attempt, at, line)
  local raw = rec_get(key, 'errors')
  local list = {}
  if raw then  -- a corrupt history is restarted, never an error that stops the caller's batch
    local ok, old = pcall(cjson.decode, raw)
    if ok and type(old) == 'table' then list = old end
  end
  local worker = rec_get(key, 'worker') or ''
  list[#list + 1] = {attempt = tonumber(attempt), at = at, error = line, worker = worker}
  while #list > 10 do table.remove(list, 1) end
  rec_set(key, 'errors', cjson.encode(list))
end

-- First line of an error text (the exception line above its traceback).
local function first_line(text)
  return string.match(text, '^[^\n]*') or text
end
