-- Extend my lock (and __write__ when it is a write lock) to now + ttl; refuse if I hold nothing.
-- A member of mine that is past its score but still present means nobody took the lock since (any
-- taker drops expired members first), so extending it is safe, as in symfony/lock.
local kind = redis.call("TYPE", key).ok
if kind ~= "none" and kind ~= "zset" then
    return refuse(kind)
end
if not redis.call("ZSCORE", key, token) then
    return 0
end
local expiry = now_ms() + tonumber(TTL_MS)
redis.call("ZADD", key, expiry, token)
if redis.call("ZSCORE", key, "__write__") then
    redis.call("ZADD", key, expiry, "__write__")
end
expire_at_max()
return 1
