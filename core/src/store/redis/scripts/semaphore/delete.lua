-- Give my weight back; the waiters get what it frees, in order. Returns 1 when I held a slot.
local removed = redis.call("ZREM", WEIGHT_KEY, token)
redis.call("ZREM", TIME_KEY, token)
if redis.call("EXISTS", QUEUE, HANDOVERS) == 0 then
    return removed
end
redis.call("HDEL", HANDOVERS, token)
local now, now_ms = clock()
prune(now)
hand_over(now_ms)
return removed
