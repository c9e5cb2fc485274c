-- Remove my token (and __write__, which only a sole writer can have beside it); re-expire the rest.
if not redis.call("ZSCORE", key, token) then
    return 0
end
redis.call("ZREM", key, token, "__write__")
expire_at_max()
return 1
