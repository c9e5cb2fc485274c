-- A waiter gives up: it leaves the queue, and a slot handed to it meanwhile (its grant list still
-- holds the unread signal) is given back. Either way the waiters behind it may now fit (it may
-- have been the heavy one at the head), so the hand-over runs.
redis.call("ZREM", QUEUE, token)
redis.call("HDEL", WAITERS, token)
redis.call("HDEL", HANDOVERS, token)
local signal = redis.call("LPOP", GRANT)
redis.call("DEL", GRANT)
if signal == SIGNAL_GRANTED then
    redis.call("ZREM", TIME_KEY, token)
    redis.call("ZREM", WEIGHT_KEY, token)
end
local now, now_ms = clock()
prune(now)
hand_over(now_ms)
return 1
