-- A waiter that gives up leaves the queue. Had a release handed the lock over to it in the
-- meantime (its grant list still holds the unread "granted" signal), it was not taken: it is
-- released and goes to the next waiter.
redis.call("ZREM", KEYS[2], token)
redis.call("HDEL", KEYS[3], token)
local signal = redis.call("LPOP", KEYS[4])
redis.call("DEL", KEYS[4])
if signal == "granted" and redis.call("ZREM", key, token, "__write__") > 0 then
    if redis.call("EXISTS", key) == 1 then
        expire_at_max()
    end
    hand_over()
end
return 1
