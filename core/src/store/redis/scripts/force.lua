-- An operator releases the lock whoever holds it: the lock key, its holders' records and the
-- records of hand-overs to them go; the fencing counter stays (tokens keep growing); the longest
-- waiter then gets the lock as after any release (handover.lua). `token` is empty: nobody's.
-- Returns how many holders it had (a symfony/lock <= 5.1 string lock counts as one).
local kind = redis.call("TYPE", key).ok
if kind ~= "none" and kind ~= "zset" and kind ~= "string" then
    return refuse(kind)
end
local count = 0
if kind == "zset" then
    redis.call("ZREMRANGEBYSCORE", key, "-inf", now_ms())
    count = redis.call("ZCARD", key)
    if redis.call("ZSCORE", key, "__write__") then
        count = count - 1
    end
elseif kind == "string" then
    count = 1
end
redis.call("DEL", key, HOLDERS, HANDOVERS)
hand_over_if_waited(true)
return count
