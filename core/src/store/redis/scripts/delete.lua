-- Release, after release_alone.lua took my token out: a reader's release leaves the remaining
-- readers to set the key's expiry, as symfony/lock does; then the lock goes to the longest
-- waiter, if anyone waits (handover.lua; `alone` has looked).
if removed == 1 then
    redis.call("HDEL", HOLDERS, token)
    expire_at_max()
else
    redis.call("DEL", HOLDERS)
end
if not alone then
    -- A writer leaves the key gone (it held alone); readers may remain after a reader.
    hand_over(removed == 2)
end
return 1
