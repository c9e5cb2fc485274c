-- Shared lock: refused only while someone else writes. A writer asking for read is demoted.
-- Refusals queue a waiter as save.lua does.
local kind, now, expiry = look()
if kind ~= "none" and kind ~= "zset" then
    return refuse(kind)
end
if kind == "none" then
    redis.call("ZADD", key, expiry, token)
    redis.call("PEXPIREAT", key, expiry)
    return taken()
end
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
if not redis.call("ZSCORE", key, token) and redis.call("ZSCORE", key, "__write__") then
    return held("s", now)
end
redis.call("ZADD", key, expiry, token)
redis.call("ZREM", key, "__write__")
expire_at_max()
return taken()
