-- A waiter a release handed the lock to (handover.lua) takes the record of that hand-over, which
-- only a take-back removes otherwise, and that removes the signal with it: a waiter that read the
-- signal finds its record here. Returns 1 when I hold the lock.
if redis.call("HDEL", HANDOVERS, token) == 0 or not redis.call("ZSCORE", key, token) then
    return 0
end
return 1
