-- The common release, run before any helper exists (as free_key.lua): my token goes, and when I
-- was the writer (my token and __write__: 2 removed, the set is gone) and nobody waits or has a
-- hand-over recorded, that is all. A __write__ beside my token can only be mine (a writer is the
-- only member besides the marker). pcall: a key of another type (a legacy string lock) is simply
-- not mine. delete.lua goes on with `removed` and `alone`. The writer's record goes with the
-- whole HOLDERS hash (it held alone; RECORDED: unless it left none, `records=off`); a reader's goes
-- by itself.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
local removed = redis.call("ZREM", key, token, "__write__")
local alone = redis.call("EXISTS", WAITERS, HANDOVERS) == 0
if removed == 2 and alone then
    if RECORDED == "1" then
        redis.call("DEL", HOLDERS)
    end
    return 1
end
