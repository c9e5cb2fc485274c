-- Shared head of every Deadbolt lock script (symfony/lock's Redis data model, SYMFONY-COMPAT.md 4).
-- KEYS[1]: the resource; KEYS[2] (where used): the resource's fencing counter or wake-up list.
-- ARGV[1]: the owner token. ARGV[2]: the TTL in milliseconds (where used).
-- Every redis.call costs server time inside one round trip, so each script calls only what its
-- case needs (a free key is the common case of an acquire).
local key = KEYS[1]
local token = ARGV[1]

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

-- ARGV[3], the caller's intent: "" a plain attempt, "join" the first attempt of a wait, "wake" a
-- waiter's attempt after it waited. A release that leaves the lock free while someone waits holds
-- it for a moment for the waiters (the "__handoff__" member, see delete.lua): only "wake" may take
-- it then, so a newcomer (often the releaser itself, straight back) cannot barge past them.
local intent = ARGV[3]

-- A refusal that tells the waiter how long the holder may still hold it: minus the key's
-- remaining milliseconds (at least 1). A waiter also enters itself in the set of waiters KEYS[2]
-- for a second (it tries again at least every 100 ms while it waits), so that releases wake it.
local function held()
    if intent == "join" or intent == "wake" then
        redis.call("ZADD", KEYS[2], now_ms() + 1000, token)
        redis.call("PEXPIRE", KEYS[2], 1000)
    end
    local left = redis.call("PTTL", key)
    if left < 1 then
        left = 1
    end
    return -left
end

-- After expired members are gone: true when a hand-off is pending and this caller may not take it.
-- A waiter ("wake") takes it over by removing the marker.
local function handoff_refuses()
    if not redis.call("ZSCORE", key, "__handoff__") then
        return false
    end
    if intent ~= "wake" then
        return true
    end
    redis.call("ZREM", key, "__handoff__")
    return false
end

-- A waiter that got the lock leaves the set of waiters (the set disappears with its last member).
local function taken()
    if intent == "join" or intent == "wake" then
        redis.call("ZREM", KEYS[2], token)
    end
    return 1
end
