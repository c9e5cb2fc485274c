-- Put off my slot to now + TTL_MS; 0 when I hold none. A slot of mine past its expiry but still
-- there was never dropped, so it still counts and nobody took its place: putting it off is safe
-- (as symfony/semaphore does).
if not redis.call("ZSCORE", TIME_KEY, token) or not redis.call("ZSCORE", WEIGHT_KEY, token) then
    return 0
end
local _, now_ms = clock()
redis.call("ZADD", TIME_KEY, expiry_of(now_ms, TTL_MS), token)
expire_at_max()
return 1
