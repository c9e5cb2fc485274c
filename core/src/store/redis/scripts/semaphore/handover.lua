-- The waiters' side shared by the scripts that free weight (delete, leave) and take it (save).
-- A waiter's details (WAITERS): "alive-until-ms weight limit ttl-ms".

-- The first live waiter: its token, weight, limit and TTL; waiters not seen alive are dropped.
local function head(now_ms)
    for _, waiter in ipairs(redis.call("ZRANGE", QUEUE, 0, 63)) do
        local details = redis.call("HGET", WAITERS, waiter)
        local alive, weight, limit, ttl = string.match(details or "", "^(%d+) (%d+) (%d+) (%d+)$")
        if alive and tonumber(alive) >= now_ms then
            return waiter, tonumber(weight), tonumber(limit), ttl
        end
        redis.call("ZREM", QUEUE, waiter)
        redis.call("HDEL", WAITERS, waiter)
    end
    return nil
end

-- Freed weight goes to the waiters in their order of arrival, each whole, while it lasts: the
-- first that does not fit (under its own limit) stops the hand-over, so a heavy waiter is never
-- overtaken by lighter ones behind it. Each one granted holds its slot with its own TTL, has the
-- grant recorded (HANDOVERS, for a take-back should it never read it) and gets the signal.
local function hand_over(now_ms)
    if redis.call("EXISTS", QUEUE) == 0 then
        return
    end
    local held = held_weight()
    local granted = false
    while true do
        local waiter, weight, limit, ttl = head(now_ms)
        if not waiter or held + weight > limit then
            break
        end
        add(waiter, weight, expiry_of(now_ms, ttl))
        held = held + weight
        granted = true
        redis.call("ZREM", QUEUE, waiter)
        redis.call("HDEL", WAITERS, waiter)
        redis.call("HSET", HANDOVERS, waiter, now_ms)
        redis.call("PEXPIRE", HANDOVERS, ALIVE_MS)
        local list = grant_list(waiter)
        redis.call("LPUSH", list, SIGNAL_GRANTED)
        redis.call("PEXPIRE", list, GRANT_LIST_MS)
    end
    if granted then
        expire_at_max()
    end
end
