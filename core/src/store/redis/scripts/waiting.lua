-- The waiting side of the lock scripts (save.lua, save_read.lua), after prelude.lua: joining the
-- queue when refused, leaving it when taken, taking back hand-overs nobody read.

-- How long a hand-over may stay unread (its "granted" signal still in the waiter's grant list)
-- before waiters take it back: a live waiter reads it at once (its BLPOP is served by the release
-- itself) or at its next attempt; one that died never does, and must not hold the lock for its TTL.
local CLAIM_MS = 250

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

-- The key as an attempt finds it: its type, and for a lock (a sorted set, or none) the server time
-- and the expiry the attempt gives. An overdue waiter first takes back hand-overs nobody read,
-- which may leave the key free.
local function look()
    local kind = redis.call("TYPE", key).ok
    if kind ~= "none" and kind ~= "zset" then
        return kind
    end
    local now = now_ms()
    if kind == "zset" and overdue and take_back_unread(now) then
        kind = redis.call("TYPE", key).ok
    end
    return kind, now, now + tonumber(ARGV[2])
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
