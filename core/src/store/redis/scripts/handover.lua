-- Hand-over, shared by delete.lua and leave.lua: when a release leaves the lock free while
-- someone waits, the lock goes straight to the longest waiter (the head of QUEUE) with that
-- waiter's mode and TTL (from WAITERS), and one signal on the waiter's own grant list tells it so:
-- the waiter needs no further round trip, and nobody (the releaser straight back, a newcomer) can
-- take the lock first. A waiter for a shared lock is granted together with every other live reader
-- in the queue. Waiters not seen alive for ALIVE_MS are dropped on the way. A grant is recorded in
-- HANDOVERS, so that waiters take it back if its signal stays unread (waiting.lua,
-- take_back_unread). No-op while the lock is still held (other readers, a symfony/lock holder) or
-- nobody waits. Its caller has found someone waiting or a hand-over recorded (EXISTS WAITERS
-- HANDOVERS: release_alone.lua's `alone`, or hand_over_if_waited); `key_gone` when it knows the key
-- is gone (a writer's release, an operator's). Every call here costs server time on the path
-- from one holder to the next, so nothing is asked twice (bench/README.md, "The hand-over").
local function hand_over(key_gone)
    -- The record of a hand-over to me, if this lock came to me that way: done with. (Every Lock has
    -- a token of its own, so records must go as their locks do, or the hash grows with each one.)
    redis.call("HDEL", HANDOVERS, token)
    if not key_gone and redis.call("EXISTS", key) == 1 then
        return
    end
    local queue = redis.call("ZRANGE", QUEUE, 0, 63)
    if #queue == 0 then
        return
    end
    local now = now_ms()
    local until_max = nil
    for _, waiter in ipairs(queue) do
        local details = redis.call("HGET", WAITERS, waiter)
        local alive, mode, ttl = string.match(details or "", "^(%d+) ([xs]) (%d+)$")
        if not alive or tonumber(alive) < now then
            redis.call("ZREM", QUEUE, waiter)
            redis.call("HDEL", WAITERS, waiter, "@" .. waiter)
        elseif mode == "s" or not until_max then
            local expiry = now + tonumber(ttl)
            if mode == "x" then
                redis.call("ZADD", key, expiry, waiter, expiry, "__write__")
            else
                redis.call("ZADD", key, expiry, waiter)
            end
            until_max = math.max(until_max or 0, expiry)
            record_holder(waiter, now, redis.call("HGET", WAITERS, "@" .. waiter))
            redis.call("ZREM", QUEUE, waiter)
            redis.call("HDEL", WAITERS, waiter, "@" .. waiter)
            redis.call("HSET", HANDOVERS, waiter, now)
            redis.call("PEXPIRE", HANDOVERS, ALIVE_MS)
            local list = grant_list(waiter)
            redis.call("LPUSH", list, SIGNAL_GRANTED)
            redis.call("PEXPIRE", list, GRANT_LIST_MS)
            if mode == "x" then
                break
            end
        end
    end
    if until_max then
        redis.call("PEXPIREAT", key, until_max)
        redis.call("PEXPIREAT", HOLDERS, until_max)
    end
end

-- Hand-over after a release that has not yet looked whether anyone waits (leave.lua, force.lua).
local function hand_over_if_waited(key_gone)
    if redis.call("EXISTS", WAITERS, HANDOVERS) > 0 then
        hand_over(key_gone)
    end
end
