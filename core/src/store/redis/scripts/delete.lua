-- Release, after release_alone.lua took my token out: a reader's release leaves the remaining
-- readers to set the key's expiry, as symfony/lock does; then the lock goes to the longest
-- waiter, if anyone waits (handover.lua).
if removed == 1 then
    redis.call("HDEL", HOLDERS, token)
    expire_at_max()
else
    redis.call("DEL", HOLDERS)
end
if not alone then
    hand_over()
end
return 1
