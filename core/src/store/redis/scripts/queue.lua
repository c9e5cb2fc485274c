-- Helpers of the scripts that name the queue (QUEUE): those that wait, those that hand over.

-- A waiter's grant list, named after the queue as keys.rs names it.
local function grant_list(waiter)
    return QUEUE .. GRANT_SEPARATOR .. waiter
end
