-- Exclusive lock: succeed when the set is empty, or when I already hold it (as the writer, or as
-- the only reader: promotion; or because a release handed it over to me while I waited). Sets my
-- token and __write__ to now + ttl. Returns 1, or (held) 0 / minus the holder's remaining ms.
local kind, now, expiry = look()
if kind ~= "none" and kind ~= "zset" then
    return refuse(kind)
end
if kind == "none" then
    record_holder(token, now, RECORD)
    redis.call("PEXPIREAT", HOLDERS, expiry)
    redis.call("ZADD", key, expiry, token, expiry, "__write__")
    redis.call("PEXPIREAT", key, expiry)
    return taken()
end
local pruned = redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
if pruned > 0 then
    prune_records()
end
if redis.call("ZSCORE", key, token) then
    if not redis.call("ZSCORE", key, "__write__") and redis.call("ZCARD", key) > 1 then
        return held("x", now)
    end
elseif pruned == 0 or redis.call("EXISTS", key) == 1 then
    -- Nothing pruned: the set look() found is still there, so somebody else holds it (the
    -- common refusal needs no ZCARD).
    return held("x", now)
end
redis.call("ZADD", key, expiry, token, expiry, "__write__")
record_holder(token, now, RECORD)
expire_at_max()
return taken()
