-- Who holds the lock and who waits, for an operator (read-only). Tokens never leave the server:
-- each is shown as the first DIGEST_HEX hex digits of its SHA-1 (holder.rs computes the same for
-- a key of its own). One JSON reply: the key's type, the server time (ms), the live holders
-- (digest, writer or not, expiry ms, record) and the live waiters in queue order (digest,
-- arrival ms, details, record). A string key is a symfony/lock <= 5.1 lock: one holder, unknown.
local function digest(token)
    return string.sub(redis.sha1hex(token), 1, DIGEST_HEX)
end
local now = now_ms()
local kind = redis.call("TYPE", key).ok
local holders = {}
if kind == "zset" then
    local members = redis.call("ZRANGEBYSCORE", key, "(" .. now, "+inf", "WITHSCORES")
    local writes = redis.call("ZSCORE", key, "__write__") ~= false
    for i = 1, #members, 2 do
        local member = members[i]
        if member ~= "__write__" then
            holders[#holders + 1] = {digest(member), writes, members[i + 1],
                redis.call("HGET", HOLDERS, member) or ""}
        end
    end
elseif kind == "string" then
    holders[1] = {"", true, tostring(now + redis.call("PTTL", key)), ""}
end
local waiters = {}
local queue = redis.call("ZRANGE", QUEUE, 0, 63, "WITHSCORES")
for i = 1, #queue, 2 do
    local waiter = queue[i]
    local details = redis.call("HGET", WAITERS, waiter) or ""
    local alive, mode = string.match(details, "^(%d+) ([xs]) ")
    if alive and tonumber(alive) >= now then
        waiters[#waiters + 1] = {digest(waiter), mode, queue[i + 1],
            redis.call("HGET", WAITERS, "@" .. waiter) or ""}
    end
end
return cjson.encode({kind, tostring(now), holders, waiters})
