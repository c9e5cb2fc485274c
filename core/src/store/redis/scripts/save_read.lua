-- Shared lock: refused only while someone else writes. A writer asking for read is demoted.
-- Refusals queue a waiter as save.lua does.
local kind, now, expiry = look()
if kind ~= "none" and kind ~= "zset" then
    return refuse(kind)
end
if kind == "none" then
    record_holder(token, now, RECORD)
    redis.call("PEXPIREAT", HOLDERS, expiry)
    redis.call("ZADD", key, expiry, token)
    redis.call("PEXPIREAT", key, expiry)
    return taken()
end
if redis.call("ZREMRANGEBYSCORE", key, "-inf", now) > 0 then
    prune_records()
end
if not redis.call("ZSCORE", key, token) and redis.call("ZSCORE", key, "__write__") then
    return held("s", now)
end
redis.call("ZADD", key, expiry, token)
redis.call("ZREM", key, "__write__")
record_holder(token, now, RECORD)
expire_at_max()
return taken()
