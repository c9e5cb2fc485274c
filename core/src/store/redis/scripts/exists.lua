-- Do I hold a live lock? Read-only: expired members are left for the next writer to drop.
local mine = redis.call("ZSCORE", key, token)
if mine and tonumber(mine) > now then
    return 1
end
return 0
