-- Shared head of the semaphore scripts, after the generated header: symfony/semaphore's data
-- (TIME_KEY: token -> expiry in Unix seconds; WEIGHT_KEY: token -> weight), on the server's
-- clock, and the queue of waiters (semaphore/handover.lua) that Deadbolt keeps beside them.

-- The server's time: whole seconds (symfony/semaphore's `now`) and milliseconds.
local function clock()
    local t = redis.call("TIME")
    local secs = tonumber(t[1])
    return secs, secs * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- A slot given `ttl_ms` from `now_ms` expires at this whole second (rounded up: symfony/semaphore
-- sets the keys' expiry with EXPIREAT on the latest slot's score, which must be a whole number).
local function expiry_of(now_ms, ttl_ms)
    return math.ceil((now_ms + tonumber(ttl_ms)) / 1000)
end

-- Expired slots go from both sets, as symfony/semaphore drops them (an expiry at or before now).
local function prune(now)
    if redis.call("ZREMRANGEBYSCORE", TIME_KEY, "-inf", now) > 0 then
        redis.call("ZINTERSTORE", WEIGHT_KEY, 2, WEIGHT_KEY, TIME_KEY, "WEIGHTS", 1, 0)
    end
end

-- The weight held now (after prune).
local function held_weight()
    local total = 0
    local members = redis.call("ZRANGE", WEIGHT_KEY, 0, -1, "WITHSCORES")
    for i = 2, #members, 2 do
        total = total + tonumber(members[i])
    end
    return total
end

-- Both sets live 10 s past the latest expiry, as symfony/semaphore keeps them.
local function expire_at_max()
    local top = redis.call("ZREVRANGE", TIME_KEY, 0, 0, "WITHSCORES")[2]
    if top then
        local at = math.ceil(tonumber(top)) + 10
        redis.call("EXPIREAT", WEIGHT_KEY, at)
        redis.call("EXPIREAT", TIME_KEY, at)
    end
end

-- `holder` holds `weight` until `expiry`.
local function add(holder, weight, expiry)
    redis.call("ZADD", TIME_KEY, expiry, holder)
    redis.call("ZADD", WEIGHT_KEY, weight, holder)
end
