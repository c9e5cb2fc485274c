<?php

declare(strict_types=1);

namespace DeadboltExamples;

use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Store\StoreFactory;

/**
 * Builds the lock store of the examples from the environment, so a manual run and the scheduler share one store.
 *
 * One host (flock):
 * - `LOCK_STORE`: `flock` (default), `flock:///abs/path` or `in-memory` (tests only: one process, excludes nothing).
 * - `LOCK_DIR`: the FlockStore directory (default: the system temp dir). Every process that locks the same
 *   resource must use the same directory; flock does not coordinate across hosts.
 *
 * Several hosts (Redis, a Deadbolt\Store\RedisStore): set `LOCK_REDIS_URL`, which wins over `LOCK_STORE`.
 * - `LOCK_REDIS_URL`: `redis://host[:port][/db][?options]`, `rediss://host[:port][/db][?options]` (TLS,
 *   certificates always verified; `ca_file=/path.pem` for a private CA) or `redis:///path/to/redis.sock`. Options:
 *   `timeout` and `read_timeout` (seconds, default 2), `db`, `ca_file`. An ACL user may be named in it
 *   (`redis://report-worker@10.0.0.5:6379/0`); the password should not be: keep the URL free of secrets, so it
 *   can be shown in a configuration review.
 * - `LOCK_REDIS_PASSWORD`: the password, when Redis requires one. Stores.php never reads its value: it adds
 *   `password_env=LOCK_REDIS_PASSWORD` to the URL, and the extension reads the variable itself when it connects.
 *   The password never passes through a PHP variable, an argument or a stack trace, and Deadbolt's messages name
 *   host:port only. A URL that already carries a password (discouraged, but it works) or its own `password_env`
 *   is used as it is; a URL with a password AND `LOCK_REDIS_PASSWORD` is refused as ambiguous.
 * Neither variable belongs in a unit file, a crontab or the code: for systemd, an EnvironmentFile owned by root,
 * mode 0600 (deploy/README.md). Use a Redis that never evicts lock keys (`maxmemory-policy noeviction`).
 *
 * Example:
 *
 *     $factory = new \Deadbolt\LockFactory(\DeadboltExamples\Stores::fromEnvironment());
 */
final class Stores
{
    private const PASSWORD_VARIABLE = 'LOCK_REDIS_PASSWORD';

    private function __construct()
    {
    }

    /**
     * @throws \RuntimeException                               when the Redis settings are unusable (never quoting them)
     * @throws \Deadbolt\Exception\InvalidArgumentException    when the directory, the store name or a DSN option is
     *                                                         unusable (naming the option, never the password)
     */
    public static function fromEnvironment(): object
    {
        $redisUrl = self::env('LOCK_REDIS_URL');
        if ($redisUrl !== null) {
            return self::redis($redisUrl);
        }

        $store = self::env('LOCK_STORE') ?? 'flock';
        if ($store === 'flock') {
            return new FlockStore(self::env('LOCK_DIR') ?? sys_get_temp_dir());
        }

        // A DSN in LOCK_STORE would tempt people to put the password into it: Redis has its own two variables.
        if (preg_match('~^rediss?:~i', $store) === 1) {
            throw new \RuntimeException('LOCK_STORE names a Redis store: set LOCK_REDIS_URL (and LOCK_REDIS_PASSWORD'
                . ' when Redis needs one) instead, and unset LOCK_STORE.');
        }

        // 'flock:///abs/path', 'in-memory'; anything else is rejected by StoreFactory, which never echoes credentials.
        return StoreFactory::createStore($store);
    }

    /**
     * A RedisStore on `$url`, with the password taken by the extension from LOCK_REDIS_PASSWORD when it is set.
     * The connection opens at the first lock operation, so a wrong address or password shows as a
     * LockAcquiringException from acquire().
     */
    private static function redis(#[\SensitiveParameter] string $url): RedisStore
    {
        // scheme://authority then the rest; parse_url() cannot read redis:///path/to/redis.sock, this can.
        if (preg_match('~\A(rediss?)://([^/?#]*)([^?#]*)(?:\?([^#]*))?\z~i', $url, $parts) !== 1) {
            throw new \RuntimeException('LOCK_REDIS_URL must be redis://host[:port][/db][?options], rediss://...'
                . ' or redis:///path/to/redis.sock (its value is not shown: it may hold a password).');
        }
        $authority = $parts[2];
        $at = strrpos($authority, '@');
        $urlHasPassword = $at !== false && str_contains(substr($authority, 0, $at), ':');
        $options = $parts[4] ?? '';
        $urlNamesPasswordEnv = preg_match('~(?:\A|&)password_env=~', $options) === 1;

        if (self::isSet(self::PASSWORD_VARIABLE) && !$urlNamesPasswordEnv) {
            if ($urlHasPassword) {
                throw new \RuntimeException('LOCK_REDIS_URL carries a password and LOCK_REDIS_PASSWORD is set too:'
                    . ' remove the password from the URL and keep it in LOCK_REDIS_PASSWORD only.');
            }
            $url .= ($options === '' ? (str_ends_with($url, '?') ? '' : '?') : '&')
                . 'password_env=' . self::PASSWORD_VARIABLE;
        }

        return new RedisStore($url);
    }

    /** The variable's value, or null when it is unset or empty (systemd's `Environment=X=` means "not set"). */
    private static function env(string $name): ?string
    {
        $value = getenv($name);

        return $value === false || $value === '' ? null : $value;
    }

    /** Whether the variable is set and not empty, without keeping its value. */
    private static function isSet(string $name): bool
    {
        return !in_array(getenv($name), [false, ''], true);
    }
}
