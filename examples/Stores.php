<?php

declare(strict_types=1);

namespace DeadboltExamples;

use Deadbolt\Store\FlockStore;
use Deadbolt\Store\StoreFactory;

/**
 * Builds the lock store of the examples from the environment, so a manual run and the scheduler share one store.
 *
 * - `LOCK_STORE`: `flock` (default), `flock:///abs/path` or `in-memory` (tests only: one process, excludes nothing).
 * - `LOCK_DIR`: the FlockStore directory (default: the system temp dir). Every process that locks the same
 *   resource must use the same directory; flock does not coordinate across hosts.
 * - `LOCK_REDIS_URL` + `LOCK_REDIS_PASSWORD`: the shared store for several servers. Reserved until Deadbolt has
 *   its RedisStore; the URL and the password are never put into a message or a log line.
 *
 * Example:
 *
 *     $factory = new \Deadbolt\LockFactory(\DeadboltExamples\Stores::fromEnvironment());
 */
final class Stores
{
    private function __construct()
    {
    }

    /**
     * @throws \RuntimeException                               when Redis is asked for (not available yet)
     * @throws \Deadbolt\Exception\InvalidArgumentException    when the directory or the store name is unusable
     */
    public static function fromEnvironment(): object
    {
        $redisUrl = self::env('LOCK_REDIS_URL');
        if ($redisUrl !== null) {
            return self::redis($redisUrl, self::env('LOCK_REDIS_PASSWORD'));
        }

        $store = self::env('LOCK_STORE') ?? 'flock';
        if ($store === 'flock') {
            return new FlockStore(self::env('LOCK_DIR') ?? sys_get_temp_dir());
        }

        // A redis DSN may carry credentials: refuse it here, before any other code could echo it.
        if (preg_match('~^rediss?:~i', $store) === 1) {
            throw new \RuntimeException('LOCK_STORE names a Redis store: set LOCK_REDIS_URL and LOCK_REDIS_PASSWORD'
                . ' instead once Redis support arrives with Deadbolt\'s RedisStore.');
        }

        // 'flock:///abs/path', 'in-memory'; anything else is rejected by StoreFactory, which never echoes credentials.
        return StoreFactory::createStore($store);
    }

    /**
     * The one place where Redis will be wired in: connect to `$url`, authenticate with `$password` (kept out of
     * the URL so the URL can be shown in configuration reviews), use `rediss://` with certificate verification
     * when the network is not private.
     */
    private static function redis(
        #[\SensitiveParameter] string $url,
        #[\SensitiveParameter] ?string $password,
    ): object {
        throw new \RuntimeException('LOCK_REDIS_URL is set, but Redis arrives with Deadbolt\'s RedisStore, which this'
            . ' build does not have yet. Unset LOCK_REDIS_URL to use the flock store (one host only).');
    }

    /** The variable's value, or null when it is unset or empty (systemd's `Environment=X=` means "not set"). */
    private static function env(string $name): ?string
    {
        $value = getenv($name);

        return $value === false || $value === '' ? null : $value;
    }
}
