-- Shared lock: refused only while someone else writes. A writer asking for read is demoted.
redis.call("ZREMRANGEBYSCORE", key, "-inf", now)
if not redis.call("ZSCORE", key, token) and redis.call("ZSCORE", key, "__write__") then
    return 0
end
redis.call("ZADD", key, now + tonumber(ARGV[2]), token)
redis.call("ZREM", key, "__write__")
expire_at_max()
return 1
