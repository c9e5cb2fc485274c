-- A waiter handed a slot takes the record of that hand-over (a write of its own after the
-- releaser's, for replicas to acknowledge). Returns 1 when I hold the slot.
if redis.call("HDEL", HANDOVERS, token) == 0 or not redis.call("ZSCORE", TIME_KEY, token) then
    return 0
end
return 1
