<?php

namespace Deadbolt\Internal;

/**
 * @internal Not for use: the end-of-request callback of the extension. When a request first acquires a lock through
 * a PHP Redis client (\Redis, \RedisCluster, Predis), Deadbolt registers one object of this class with
 * register_shutdown_function(); it releases, once, every such lock still held (PHP destroys leftover objects after
 * the script's last frame is gone, where a client's exception would be fatal). Locks on DSN, flock and in-memory
 * stores need no such help. It cannot be made from PHP, and only the object Deadbolt made does anything.
 */
final class EndOfRequest
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function __invoke(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
