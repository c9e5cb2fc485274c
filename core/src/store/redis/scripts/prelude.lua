-- Shared head of every Deadbolt lock script (symfony/lock's Redis data model, see SYMFONY-COMPAT.md 4).
-- KEYS[1]: the resource. ARGV[1]: the owner token. ARGV[2]: the TTL in milliseconds (where used).
-- A string key is a lock written by symfony/lock <= 5.1 (SET NX PX): held by someone else.
-- Any other type but a sorted set is not a lock at all: an error naming the type.
local key = KEYS[1]
local token = ARGV[1]
local kind = redis.call("TYPE", key).ok
if kind == "string" then
    return 0
end
if kind ~= "zset" and kind ~= "none" then
    return redis.error_reply("DEADBOLT_WRONGTYPE the key holds a " .. kind .. ", not a lock")
end
local clock = redis.call("TIME")
local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
-- The key lives as long as its longest-lived member.
local function expire_at_max()
    local top = redis.call("ZREVRANGE", key, 0, 0, "WITHSCORES")[2]
    if top then
        redis.call("PEXPIREAT", key, top)
    end
end
