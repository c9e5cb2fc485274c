-- A waiter a release handed the lock to (handover.lua) takes the record of that hand-over, which
-- only a take-back removes otherwise, and that removes the signal with it: a waiter that read the
-- signal finds its record here. KEYS: the resource, HANDOVERS (the second lock KEY's name is
-- QUEUE in the header; this script names it by position). Returns 1 when I hold the lock.
local handovers = KEYS[2]
if redis.call("HDEL", handovers, token) == 0 or not redis.call("ZSCORE", key, token) then
    return 0
end
return 1
