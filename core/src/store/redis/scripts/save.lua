-- Exclusive lock: succeed when the set is empty, or when I already hold it (as the writer, or as
-- the only reader: promotion). Sets my token and __write__ to now + ttl. Returns 1.
-- Refused (held): a waiting caller enters the set of waiters KEYS[2], so that releases push a
-- wake-up signal (and only then: an uncontended release spends nothing on waking nobody).
local kind = redis.call("TYPE", key).ok
if kind ~= "none" and kind ~= "zset" then
    return refuse(kind)
end
local now = now_ms()
local expiry = now + tonumber(ARGV[2])
if kind == "none" then
    redis.call("ZADD", key, expiry, token, expiry, "__write__")
    redis.call("PEXPIREAT", key, expiry)
    return taken()
end
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
if handoff_refuses() then
    return held()
end
if redis.call("ZSCORE", key, token) then
    if not redis.call("ZSCORE", key, "__write__") and redis.call("ZCARD", key) > 1 then
        return held()
    end
elseif redis.call("ZCARD", key) > 0 then
    return held()
end
redis.call("ZADD", key, expiry, token, expiry, "__write__")
expire_at_max()
return taken()
