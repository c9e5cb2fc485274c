-- The next fencing token of the resource (the second key, a counter that only grows, kept without
-- expiry), drawn only by the current writer: 0 when my token and __write__ are not both live
-- members. Drawn under the lock, so holders draw in the order they held it.
local counter = KEYS[2]
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" or not redis.call("ZSCORE", key, "__write__") then
    return 0
end
if tonumber(mine) <= now_ms() then
    return 0
end
return redis.call("INCR", counter)
