-- The next fencing token of the resource (COUNTER), drawn only by the current
-- writer: 0 when my token and __write__ are not both live members. Drawn under the lock, so
-- holders draw in the order they held it.
-- The token is the server clock in microseconds, or one past the last token when that is ahead:
-- it increases whether or not the counter is still there, so the counter need not live forever.
-- It outlives my hold by FENCE_KEEP_MS. A counter of an older Deadbolt (a small INCR value) is
-- simply behind the clock. Lua numbers are doubles: exact up to 2^53, far beyond the clock.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" or not redis.call("ZSCORE", key, "__write__") then
    return 0
end
local clock = redis.call("TIME")
local now = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local held_until = tonumber(mine)
if held_until <= math.floor(now / 1000) then
    return 0
end
local last = tonumber(redis.call("GET", COUNTER) or "0") or 0
local next = math.max(last + 1, now)
local keep = held_until - math.floor(now / 1000) + FENCE_KEEP_MS
redis.call("SET", COUNTER, string.format("%.0f", next), "PX", string.format("%.0f", keep))
return next
