-- Shared head of every Deadbolt lock script (symfony/lock's Redis data model, SYMFONY-COMPAT.md 4).
-- KEYS[1]: the resource. ARGV[1]: the owner token; ARGV[2]: the TTL in milliseconds (where used).
-- Waiting callers and releases also name the resource's queue of waiters (KEYS[2], a sorted set:
-- token -> arrival, server ms) and the waiters' details (KEYS[3], a hash: token -> "alive-until
-- mode ttl"); a waiter names its own grant list too (KEYS[4]), the list a release pushes to when
-- it hands the lock over to that waiter.
-- Every redis.call costs server time inside one round trip, so each script calls only what its
-- case needs (a free key is the common case of an acquire, nobody waiting that of a release), and
-- only the scripts that take a lock carry waiting.lua, only those that release handover.lua: Lua
-- makes every helper function anew on each run.
local key = KEYS[1]
local token = ARGV[1]

-- How long a waiter counts as alive after it last asked (it asks again at least every 100 ms
-- while it waits): a waiter that died, or lost its connection (a restarted Redis, a dead proxy),
-- is skipped by hand-overs after this long. Each hand-over to such a waiter costs CLAIM_MS
-- (waiting.lua).
local ALIVE_MS = 400

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
