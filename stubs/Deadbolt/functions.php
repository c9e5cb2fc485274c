<?php

namespace Deadbolt;

/**
 * Releases every lock of this request still held through a PHP Redis client (\Redis, \RedisCluster, Predis),
 * silently. Deadbolt registers it with register_shutdown_function() when the first such lock is acquired: PHP
 * destroys leftover objects after the script's last frame is gone, where a client's exception would be fatal.
 * Locks on DSN, flock and in-memory stores need no such help. Calling it yourself is harmless.
 */
function release_client_locks(): void
{
    throw new \Error('The deadbolt extension is not loaded.');
}
