-- Shared head of every Deadbolt lock script (symfony/lock's Redis data model, SYMFONY-COMPAT.md 4).
-- KEYS[1]: the resource. ARGV[1]: the owner token; ARGV[2]: the TTL in milliseconds (where used).
-- Waiting callers and releases also name the resource's queue of waiters (KEYS[2], a sorted set:
-- token -> arrival, server ms) and the waiters' details (KEYS[3], a hash: token -> "alive-until
-- mode ttl"); a waiter names its own grant list too (KEYS[4]), the list a release pushes to when
-- it hands the lock over to that waiter.
-- Every redis.call costs server time inside one round trip, so each script calls only what its
-- case needs (a free key is the common case of an acquire, nobody waiting that of a release).
local key = KEYS[1]
local token = ARGV[1]

-- How long a waiter counts as alive after it last asked (it asks again at least every 100 ms
-- while it waits): a waiter that died, or lost its connection (a restarted Redis, a dead proxy),
-- is skipped by hand-overs after this long. Each hand-over to such a waiter costs CLAIM_MS.
local ALIVE_MS = 400

-- How long a hand-over may stay unread (its "granted" signal still in the waiter's grant list)
-- before waiters take it back: a live waiter reads it at once (its BLPOP is served by the release
-- itself) or at its next attempt; one that died never does, and must not hold the lock for its TTL.
local CLAIM_MS = 250

-- Server time in milliseconds: member scores are absolute expiries, as symfony/lock writes them.
local function now_ms()
    local clock = redis.call("TIME")
    return clock[1] * 1000 + math.floor(clock[2] / 1000)
end

-- A string key is a lock written by symfony/lock <= 5.1 (SET NX PX): held by someone else (0).
-- A type other than a sorted set is not a lock at all: an error naming it.
local function refuse(kind)
    if kind == "string" then
        return 0
    end
    return redis.error_reply("DEADBOLT_WRONGTYPE the key holds a " .. kind .. ", not a lock")
end

-- The key lives as long as its longest-lived member.
local function expire_at_max()
    local top = redis.call("ZREVRANGE", key, 0, 0, "WITHSCORES")[2]
    if top then
        redis.call("PEXPIREAT", key, top)
    end
end

-- ARGV[3] is "wait" for the attempts of a caller that waits when refused. ARGV[4], when given,
-- is how long (ms) the caller then waits for a signal on its grant list, in the same round trip
-- (a BLPOP sent right behind this script): the script then ends that wait at once, with a signal of
-- its own, when there is nothing to wait for.
local waiting = ARGV[3] == "wait"
local pause = tonumber(ARGV[4])
-- ARGV[5] is "1" once the caller has waited longer than CLAIM_MS: only then may a hand-over that
-- nobody read be what holds it up, and its attempts look for one (take_back_unread).
local overdue = ARGV[5] == "1"

-- A refusal that tells the caller how long the holder may still hold it: minus the key's
-- remaining milliseconds (at least 1). A waiter joins the queue (keeping its first arrival) and
-- renews its details, so that a release hands the lock over to it (handover.lua). A holder that
-- expires before the caller's wait would end gets a "soon" signal: the caller waits that long only.
local function held(mode, now)
    local left = redis.call("PTTL", key)
    if left < 1 then
        left = 1
    end
    if waiting then
        redis.call("ZADD", KEYS[2], "NX", now, token)
        redis.call("HSET", KEYS[3], token, (now + ALIVE_MS) .. " " .. mode .. " " .. ARGV[2])
        redis.call("PEXPIRE", KEYS[2], ALIVE_MS)
        redis.call("PEXPIRE", KEYS[3], ALIVE_MS)
        if pause and left < pause then
            redis.call("LPUSH", KEYS[4], "soon")
        end
    end
    return -left
end

-- Hand-overs (handover.lua records them in KEYS[3] as "granted <ms>") whose signal nobody read
-- within CLAIM_MS are taken back: the waiter's token (and __write__, which can only be its own
-- while its token is there) leaves the lock. True when one was taken back. Run by overdue waiters.
local function take_back_unread(now)
    local taken_back = false
    local details = redis.call("HGETALL", KEYS[3])
    for i = 1, #details, 2 do
        local waiter = details[i]
        local granted_at = tonumber(string.match(details[i + 1], "^granted (%d+)$"))
        if granted_at and waiter ~= token and now - granted_at > CLAIM_MS then
            local list = KEYS[2] .. ":" .. waiter
            if redis.call("LLEN", list) > 0 and redis.call("ZSCORE", key, waiter) then
                redis.call("ZREM", key, waiter, "__write__")
                taken_back = true
            end
            redis.call("DEL", list)
            redis.call("HDEL", KEYS[3], waiter)
        end
    end
    return taken_back
end

-- A waiter that got the lock leaves the queue; a hand-over signal that it did not read goes too
-- (and a "taken" signal ends the wait sent behind this script).
local function taken()
    if waiting then
        redis.call("ZREM", KEYS[2], token)
        redis.call("HDEL", KEYS[3], token)
        redis.call("DEL", KEYS[4])
        if pause then
            redis.call("LPUSH", KEYS[4], "taken")
        end
    end
    return 1
end
