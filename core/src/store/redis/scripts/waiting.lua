-- The waiting side of the lock scripts (save.lua, save_read.lua), after free_key.lua and
-- prelude.lua: joining the queue when refused, leaving it when taken, taking back hand-overs
-- nobody read (protocol.rs says what WAIT, PAUSE_MS and OVERDUE mean).
local waiting = WAIT == WAITING
local pause = tonumber(PAUSE_MS)
local overdue = OVERDUE == "1"

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
        redis.call("ZADD", QUEUE, "NX", now, token)
        -- Its record waits beside its details (under "@" .. token), for a hand-over to move.
        redis.call("HSET", WAITERS, token, (now + ALIVE_MS) .. " " .. mode .. " " .. TTL_MS,
            "@" .. token, RECORD)
        redis.call("PEXPIRE", QUEUE, ALIVE_MS)
        redis.call("PEXPIRE", WAITERS, ALIVE_MS)
        -- Records of hand-overs live while someone waits: an unread one is taken back by a waiter.
        redis.call("PEXPIRE", HANDOVERS, ALIVE_MS)
        if pause and left < pause then
            redis.call("LPUSH", GRANT, SIGNAL_SOON)
            redis.call("PEXPIRE", GRANT, GRANT_LIST_MS)
        end
    end
    return -left
end

-- Hand-overs (HANDOVERS: waiter -> grant time) whose signal nobody read within CLAIM_MS are taken
-- back: the waiter's token (and __write__, which can only be its own while its token is there)
-- leaves the lock. True when one was taken back. Run by overdue waiters only.
local function take_back_unread(now)
    local taken_back = false
    local records = redis.call("HGETALL", HANDOVERS)
    for i = 1, #records, 2 do
        local waiter = records[i]
        local granted_at = tonumber(records[i + 1])
        if granted_at and waiter ~= token and now - granted_at > CLAIM_MS then
            local list = grant_list(waiter)
            if redis.call("LLEN", list) > 0 and redis.call("ZSCORE", key, waiter) then
                redis.call("ZREM", key, waiter, "__write__")
                redis.call("HDEL", HOLDERS, waiter)
                taken_back = true
            end
            redis.call("DEL", list)
            redis.call("HDEL", HANDOVERS, waiter)
        end
    end
    return taken_back
end

-- The key as an attempt finds it: its type (free_key.lua's first look), and for a lock (a sorted
-- set, or none) the server time and the expiry the attempt gives. An overdue waiter first takes
-- back hand-overs nobody read, which may leave the key free.
local function look()
    local kind = first_look
    if kind ~= "none" and kind ~= "zset" then
        return kind
    end
    local now = now_ms()
    if kind == "zset" and overdue and take_back_unread(now) then
        kind = redis.call("TYPE", key).ok
    end
    return kind, now, now + tonumber(TTL_MS)
end

-- A waiter that got the lock leaves the queue; a hand-over signal that it did not read goes too
-- (and a "taken" signal ends the wait sent behind this script). HANDED_OVER when a release had
-- handed the lock to this waiter already (its record goes), TAKEN otherwise.
local function taken()
    local reply = TAKEN
    if waiting then
        redis.call("ZREM", QUEUE, token)
        redis.call("HDEL", WAITERS, token, "@" .. token)
        if redis.call("HDEL", HANDOVERS, token) == 1 then
            reply = HANDED_OVER
        end
        redis.call("DEL", GRANT)
        if pause then
            -- Read at once by the wait behind this script; the expiry covers a waiter killed first.
            redis.call("LPUSH", GRANT, SIGNAL_TAKEN)
            redis.call("PEXPIRE", GRANT, GRANT_LIST_MS)
        end
    end
    return reply
end
