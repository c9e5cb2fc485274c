-- Do I hold a live lock? Read-only: expired members are left for the next writer to drop.
local mine = redis.pcall("ZSCORE", key, token)
if type(mine) ~= "string" then
    return 0
end
if tonumber(mine) > now_ms() then
    return 1
end
return 0
