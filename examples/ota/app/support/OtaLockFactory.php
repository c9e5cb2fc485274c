<?php

declare(strict_types=1);

namespace app\support;

use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use support\Redis;

/**
 * Builds the OTA service's distributed locks: a Deadbolt RedisStore on the CURRENT connection of the Redis pool.
 *
 * Nothing is cached: the pool may hand another connection to the next request, and a store kept from an earlier
 * request would talk on a connection that now belongs to someone else (or is closed). A RedisStore over a
 * `\Redis` object is a thin wrapper: building one per lock costs nothing on the network.
 *
 * The store runs its scripts through the client's own methods (EVALSHA, EVAL on NOSCRIPT), so the pool's
 * AUTH, SELECT and prefix apply to the lock keys as to every other key.
 *
 * Call it in a worker (while it serves a request, or from onWorkerStart), where the pool's client is the worker's own.
 * A client connected in webman's master before it forked the workers is shared by all of them, and Deadbolt refuses
 * it ("this client was connected before fork() ..."). A DSN store (`new RedisStore('redis://...')`) is fork-safe
 * wherever it is built. See README.md, "Where webman code creates its store".
 */
final class OtaLockFactory
{
    private function __construct()
    {
    }

    /** A lock named `$resource` (the Redis key) that expires `$ttlSeconds` after acquire() unless refreshed. */
    public static function create(string $resource, float $ttlSeconds): Lock
    {
        $store = new RedisStore(Redis::connection()->client());

        return (new LockFactory($store))->createLock($resource, $ttlSeconds);
    }
}
