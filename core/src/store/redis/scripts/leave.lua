-- A waiter that gives up leaves the queue. Had a release handed the lock over to it in the
-- meantime (its grant list still holds the unread signal), it was not taken: it is released and
-- goes to the next waiter.
redis.call("ZREM", QUEUE, token)
redis.call("HDEL", WAITERS, token, "@" .. token)
redis.call("HDEL", HANDOVERS, token)
local signal = redis.call("LPOP", GRANT)
redis.call("DEL", GRANT)
if signal == SIGNAL_GRANTED and redis.call("ZREM", key, token, "__write__") > 0 then
    redis.call("HDEL", HOLDERS, token)
    local key_gone = redis.call("EXISTS", key) == 0
    if not key_gone then
        expire_at_max()
    end
    hand_over_if_waited(key_gone)
end
return 1
