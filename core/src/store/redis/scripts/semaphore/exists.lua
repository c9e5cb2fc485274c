-- Do I hold a live slot? Read-only (an expired one is left for the next taker to drop).
local expiry = redis.call("ZSCORE", TIME_KEY, token)
if not expiry or not redis.call("ZSCORE", WEIGHT_KEY, token) then
    return 0
end
local now = clock()
if tonumber(expiry) > now then
    return 1
end
return 0
