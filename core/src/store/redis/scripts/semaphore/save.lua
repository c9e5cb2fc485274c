-- Take WEIGHT of LIMIT for my token until now + TTL_MS: when it fits and nobody alive waits before
-- me (a caller that does not wait never goes before a waiter). A slot I hold already (taken
-- before, or handed over while I waited) is put off instead. Returns TAKEN or HANDED_OVER, or,
-- refused, minus the milliseconds until the first slot expires (at least 1); a caller that waits
-- then joins the queue (keeping its place) and gets a "soon" signal when that comes before its
-- pause ends (protocol.rs: WAIT, PAUSE_MS, OVERDUE).
local waiting = WAIT == WAITING
local pause = tonumber(PAUSE_MS)
local now, now_ms = clock()

local function taken()
    local reply = TAKEN
    if waiting then
        redis.call("ZREM", QUEUE, token)
        redis.call("HDEL", WAITERS, token)
        if redis.call("HDEL", HANDOVERS, token) == 1 then
            reply = HANDED_OVER
        end
        redis.call("DEL", GRANT)
        if pause then
            redis.call("LPUSH", GRANT, SIGNAL_TAKEN)
            redis.call("PEXPIRE", GRANT, GRANT_LIST_MS)
        end
    end
    return reply
end

local function refused()
    local first = redis.call("ZRANGE", TIME_KEY, 0, 0, "WITHSCORES")[2]
    local left = 1
    if first then
        left = math.max(1, tonumber(first) * 1000 - now_ms)
    end
    if waiting then
        redis.call("ZADD", QUEUE, "NX", now_ms, token)
        redis.call("HSET", WAITERS, token,
            (now_ms + ALIVE_MS) .. " " .. WEIGHT .. " " .. LIMIT .. " " .. TTL_MS)
        redis.call("PEXPIRE", QUEUE, ALIVE_MS)
        redis.call("PEXPIRE", WAITERS, ALIVE_MS)
        redis.call("PEXPIRE", HANDOVERS, ALIVE_MS)
        if pause and left < pause then
            redis.call("LPUSH", GRANT, SIGNAL_SOON)
            redis.call("PEXPIRE", GRANT, GRANT_LIST_MS)
        end
    end
    return -left
end

-- Hand-overs nobody read within CLAIM_MS (the waiter died) are taken back. Overdue waiters only.
local function take_back_unread()
    local records = redis.call("HGETALL", HANDOVERS)
    for i = 1, #records, 2 do
        local waiter = records[i]
        local granted_at = tonumber(records[i + 1])
        if granted_at and waiter ~= token and now_ms - granted_at > CLAIM_MS then
            local list = grant_list(waiter)
            if redis.call("LLEN", list) > 0 then
                redis.call("ZREM", TIME_KEY, waiter)
                redis.call("ZREM", WEIGHT_KEY, waiter)
            end
            redis.call("DEL", list)
            redis.call("HDEL", HANDOVERS, waiter)
        end
    end
end

if OVERDUE == "1" then
    take_back_unread()
end
prune(now)
local expiry = expiry_of(now_ms, TTL_MS)
if redis.call("ZSCORE", TIME_KEY, token) then
    redis.call("ZADD", TIME_KEY, expiry, token)
    expire_at_max()
    return taken()
end
local first = head(now_ms)
if (not first or first == token) and held_weight() + tonumber(WEIGHT) <= tonumber(LIMIT) then
    add(token, WEIGHT, expiry)
    expire_at_max()
    return taken()
end
return refused()
