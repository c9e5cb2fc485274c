-- Shared head of every Deadbolt lock script (symfony/lock's Redis data model, docs/API-CONTRACT.md),
-- after the generated header, which names the script's KEYS and ARGV (calls.rs: key, token, ...)
-- and holds the protocol's constants and signals.
-- Every redis.call costs server time inside one round trip, so each script calls only what its
-- case needs (a free key is the common case of an acquire, nobody waiting that of a release), and
-- only the scripts that take a lock carry waiting.lua, only those that release handover.lua: Lua
-- makes every helper function anew on each run.

-- Server time in milliseconds: member scores are absolute expiries, as symfony/lock writes them.
local function now_ms()
    local clock = redis.call("TIME")
    return clock[1] * 1000 + math.floor(clock[2] / 1000)
end

-- A string key is a lock written by symfony/lock <= 5.1 (SET NX PX): held by someone else (0).
-- A type other than a sorted set is not a lock at all: an error naming it (transport.rs reads
-- the code).
local function refuse(kind)
    if kind == "string" then
        return 0
    end
    return redis.error_reply(NOT_A_LOCK .. " the key holds a " .. kind .. ", not a lock")
end

-- The key lives as long as its longest-lived member, and so do the holders' records (HOLDERS,
-- named by every script that calls this); with the key gone they go too.
local function expire_at_max()
    local top = redis.call("ZREVRANGE", key, 0, 0, "WITHSCORES")[2]
    if top then
        redis.call("PEXPIREAT", key, top)
        redis.call("PEXPIREAT", HOLDERS, top)
    else
        redis.call("DEL", HOLDERS)
    end
end

-- The record of `holder`, who took the lock at `now`: what it told of itself (RECORD, or what it
-- left in WAITERS while it waited), behind the time.
local function record_holder(holder, now, record)
    if record ~= "" then
        redis.call("HSET", HOLDERS, holder, now .. "\t" .. (record or ""))
    end
end

-- Records of holders no longer in the lock (expired, taken back) go; run when members were dropped.
local function prune_records()
    for _, holder in ipairs(redis.call("HKEYS", HOLDERS)) do
        if not redis.call("ZSCORE", key, holder) then
            redis.call("HDEL", HOLDERS, holder)
        end
    end
end
