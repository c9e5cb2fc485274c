-- The common acquire, run before any helper exists: a free key, for a caller that does not wait
-- (so it is not overdue either). Lua makes every helper function anew on each run, which cost
-- about a fifth of an acquire's server time (bench/README.md), so this path needs only the
-- header. EXCLUSIVE comes from the script that starts with this (save.lua or save_read.lua).
-- Anything else goes on to the helpers; `first_look` (the key's type) saves them a second TYPE.
-- The holder's record (HOLDERS: token -> "acquired-ms TAB pid TAB host TAB label") lives exactly as
-- long as the lock key; an empty RECORD (`records=off`) leaves none.
local first_look = redis.call("TYPE", key).ok
if first_look == "none" and WAIT ~= WAITING then
    local clock = redis.call("TIME")
    local now = clock[1] * 1000 + math.floor(clock[2] / 1000)
    local expiry = now + tonumber(TTL_MS)
    if EXCLUSIVE then
        redis.call("ZADD", key, expiry, token, expiry, "__write__")
    else
        redis.call("ZADD", key, expiry, token)
    end
    redis.call("PEXPIREAT", key, expiry)
    if RECORD ~= "" then
        redis.call("HSET", HOLDERS, token, now .. "\t" .. RECORD)
        redis.call("PEXPIREAT", HOLDERS, expiry)
    end
    return TAKEN
end
