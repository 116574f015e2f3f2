--[[
  set_quota: set or clear a quota: at most max jobs not yet finished in one group, in each group ("*"),
  or in the whole queue (""). The mint scripts learn that the queue has one from the hash's existence
  (_mint.lua's mint_flags); with the last quota the hash goes, and mints stop counting. Jobs already
  counted are given back as they end, whatever quotas remain (_quotas.lua).
  KEYS[1] ns        <prefix>:{<queue>}:
  ARGV[1] group     group name | "*" each group on its own | "" the whole queue
  ARGV[2] max       integer >= 0, or "" to clear
  Derived: quotas
  Returns: the number of quotas the queue has now
]]
local quotas = ns .. 'quotas'
if ARGV[2] == '' then
  redis.call('HDEL', quotas, ARGV[1])
else
  redis.call('HSET', quotas, ARGV[1], ARGV[2])
end
return redis.call('HLEN', quotas)
