--[[
  _chunks: a command over a list of any length, in chunks that unpack can take.
]]
-- Call f with the items of a list, at most 1000 at a time (unpack's limit is a few thousand).
local function each_chunk(list, f)
  if #list <= 1000 then
    if #list > 0 then f(list) end  -- the usual case: the list itself, not a copy
    return
  end
  for i = 1, #list, 1000 do f({unpack(list, i, math.min(i + 999, #list))}) end
end
