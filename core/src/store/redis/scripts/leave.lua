-- A waiter that gives up leaves the set of waiters (KEYS[2]), so that releases stop holding the
-- lock for it.
redis.call("ZREM", KEYS[2], token)
return 1
