-- Remove my token. When it is present, a __write__ beside it can only be mine (a writer is the
-- only member besides the marker), so both go. The key's expiry is left as it is: it is already
-- at least the longest remaining member's, and an emptied set disappears by itself.
-- pcall: a key of another type (a legacy string lock) is simply not mine.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
redis.call("ZREM", key, token, "__write__")
return 1
