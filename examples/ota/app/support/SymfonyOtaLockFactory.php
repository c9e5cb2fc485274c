<?php

declare(strict_types=1);

namespace app\support;

use Deadbolt\Bridge\Symfony\LockFactory;
use Deadbolt\Store\RedisStore;
use Symfony\Component\Lock\LockInterface;
use support\Redis;

/**
 * Seed 001's plan, as it wrote it: the OTA locks typed as symfony/lock's LockInterface, built on the CURRENT pool
 * connection. One line differs from the plan: the LockFactory is the Deadbolt bridge's (and the store Deadbolt's),
 * so the Symfony-typed lock is Deadbolt's native Lock underneath.
 */
final class SymfonyOtaLockFactory
{
    private function __construct()
    {
    }

    /** A lock named `$resource` (the Redis key) that expires `$ttlSeconds` after acquire() unless refreshed. */
    public static function create(string $resource, float $ttlSeconds): LockInterface
    {
        $store = new RedisStore(Redis::connection()->client());

        return (new LockFactory($store))->createLock($resource, $ttlSeconds);
    }
}
