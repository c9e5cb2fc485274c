-- Remove my token. When it is present, a __write__ beside it can only be mine (a writer is the
-- only member besides the marker), so both go: 2 removed means I was the writer and the set is
-- gone; 1 means I was a reader, and the remaining readers set the key's expiry, as symfony/lock
-- does. Then the lock goes to the longest waiter, if anyone waits (handover.lua).
-- pcall: a key of another type (a legacy string lock) is simply not mine.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
if redis.call("ZREM", key, token, "__write__") == 1 then
    expire_at_max()
end
hand_over()
return 1
