-- Remove my token. When it is present, a __write__ beside it can only be mine (a writer is the
-- only member besides the marker), so both go. The remaining members (readers) set the key's
-- expiry, as symfony/lock does; an emptied set has disappeared by itself.
-- Then one wake-up signal goes to the resource's list (KEYS[2]): the longest waiting BLPOP of any
-- process gets it. At most one signal is kept, for a minute, when nobody waits.
-- pcall: a key of another type (a legacy string lock) is simply not mine.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
redis.call("ZREM", key, token, "__write__")
expire_at_max()
redis.call("LPUSH", KEYS[2], "1")
redis.call("LTRIM", KEYS[2], 0, 0)
redis.call("PEXPIRE", KEYS[2], 60000)
return 1
