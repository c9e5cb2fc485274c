-- Remove my token. When it is present, a __write__ beside it can only be mine (a writer is the
-- only member besides the marker), so both go: 2 removed means I was the writer and the set is
-- gone; 1 means I was a reader, and the remaining readers set the key's expiry, as symfony/lock
-- does. Then, only when someone is in the set of waiters (KEYS[3]), one wake-up signal goes to the list
-- KEYS[2]: the longest waiting BLPOP of any process gets it (at most one is kept, for a minute).
-- pcall: a key of another type (a legacy string lock) is simply not mine.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
if redis.call("ZREM", key, token, "__write__") == 1 then
    expire_at_max()
end
if redis.call("EXISTS", KEYS[3]) == 0 then
    return 1
end
local now = now_ms()
redis.call("ZREMRANGEBYSCORE", KEYS[3], "-inf", now)
if redis.call("ZCARD", KEYS[3]) > 0 then
    -- Someone waits. A lock left free is held for 25 ms for the waiter this signal wakes, so that
    -- the lock goes to the longest waiter rather than to whoever asks first (an unclaimed hand-off
    -- simply expires; symfony/lock processes see a held lock for that moment).
    if redis.call("EXISTS", key) == 0 then
        redis.call("ZADD", key, now + 25, "__handoff__")
        redis.call("PEXPIREAT", key, now + 25)
    end
    redis.call("LPUSH", KEYS[2], "1")
    redis.call("LTRIM", KEYS[2], 0, 0)
    redis.call("PEXPIRE", KEYS[2], 60000)
end
return 1
