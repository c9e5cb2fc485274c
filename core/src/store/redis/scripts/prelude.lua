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

-- A refusal that tells the waiter how long the holder may still hold it: minus the key's
-- remaining milliseconds (at least 1), so 1 and above stay free for successes.
local function held()
    local left = redis.call("PTTL", key)
    if left < 1 then
        left = 1
    end
    return -left
end
