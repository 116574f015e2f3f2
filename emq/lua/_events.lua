--[[
  _events: the event stream of a queue; scripts.py starts every script with the line
  "local EVENTS_MAX = <n>" (0: EMQ_EVENTS is off).
  Suffixes used here: events
  A script records each state change with emit(kind, id, detail, extra) and calls
  flush_events() before it returns: the changes of one call become ONE stream entry (at most
  EVENT_CHUNK events an entry), so events cost one XADD a script call, not one a job. The
  stream is capped near EVENTS_MAX entries (XADD MAXLEN ~). Entry: field "e", a JSON list of
  [kind, id, detail?, extra?]; kinds: minted (detail = the state it was minted in), ready,
  scheduled, active (detail = attempt), progress (detail = fraction, extra = note), completed,
  retried (detail = ready | scheduled), dead (detail = reason), cancelled, stalled (detail =
  ready | dead), waiting (a dead job of a flow waits again: detail = the retried parent; or a durable job
  suspended: detail = "signal <name>" | "children"),
  batch (id = the batch's; detail = completed | failed | waiting).
]]
local EVENT_CHUNK = 100
local events = {}

-- Append the pending events to the stream as one entry.
local function flush_events()
  if #events == 0 then return end
  redis.call('XADD', ns .. 'events', 'MAXLEN', '~', EVENTS_MAX, '*', 'e', cjson.encode(events))
  events = {}
end

-- Record one state change (nothing when events are off).
local function emit(kind, id, detail, extra)
  if EVENTS_MAX == 0 then return end
  events[#events + 1] = {kind, id, detail, extra}
  if #events >= EVENT_CHUNK then flush_events() end
end
