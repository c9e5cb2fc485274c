<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks in Redis, shared with every symfony/lock (>= 5.2) RedisStore working on the same Redis database.
 *
 * ```php
 * // By DSN: Deadbolt opens and keeps the connection itself.
 * $store = new \Deadbolt\Store\RedisStore('redis://cache.internal:6379/0?password_env=REDIS_LOCK_PASSWORD');
 *
 * // Or through a client the application already has: its prefix, auth and connection settings apply.
 * $redis = new \Redis();
 * $redis->connect('cache.internal', 6379);
 * $store = new \Deadbolt\Store\RedisStore($redis);
 *
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42', 30.0);
 * if ($lock->acquire()) {
 *     try {
 *         // ... at most 30 seconds of work, or $lock->refresh() ...
 *     } finally {
 *         $lock->release();
 *     }
 * }
 * ```
 *
 * DSN forms (the connection is opened at the first lock operation, not here):
 * - `redis://[user[:password]@]host[:port][/db][?options]` (port 6379, database 0 by default);
 * - `rediss://...`: TLS; the server certificate is always verified, no option turns that off;
 * - `redis:///path/to/redis.sock[?db=N]`: a unix socket;
 * - Sentinel, in Symfony's forms: `redis:?host[s1:26379]&host[s2:26379]&redis_sentinel=mymaster[&db=N]` or
 *   `redis://s1:26379[/db]?redis_sentinel=mymaster` (`sentinel_master` is the same option). The hosts are
 *   sentinels, asked in turn for the service's primary at each new connection; the primary found must answer ROLE
 *   as one. A primary that dies or is turned into a replica (READONLY) is left for the one the sentinels name then,
 *   with the same store and Lock objects. The user and password are the primary's; `sentinel_username` and
 *   `sentinel_password_env` are the sentinels' own. `rediss:?host[...]...` speaks TLS to sentinels and primary.
 * - Redis Cluster, in Symfony's form: `redis:?host[n1:7000]&host[n2:7001]&redis_cluster=1` or
 *   `redis://n1:7000?host[n2:7001]&redis_cluster=1`; several hosts without `redis_sentinel` mean a cluster too. The
 *   hosts are seed nodes: the slot map is read from the first that answers (CLUSTER SLOTS), each lock goes to the
 *   primary serving its resource's hash slot (one connection per node), MOVED and ASK redirects are followed, and a
 *   node that dies or fails over has the map read again from the others, with the same store and Lock objects.
 *   Database 0 only, no `release=deferred`. A resource name that cannot share its hash slot with Deadbolt's own keys
 *   (a brace but no hash tag, as `a{b`, or the empty name) is refused with an InvalidArgumentException (also over a
 *   `\RedisCluster` object); `orders:42` and `user:{42}:cart` are fine.
 *
 * DSN options: `timeout` (connect timeout, seconds, default 2), `read_timeout` (seconds, default 2),
 * `password_env` (the NAME of an environment variable holding the password, so the secret stays out of
 * configuration files), `ca_file` (PEM bundle, rediss only), `db` (database number), `release` (`sync`, the
 * default, or `deferred`: Lock::release() sends its script and returns without waiting for the reply, which is read
 * before the connection's next command and at the end of the request; a release the server refuses is then logged
 * and counted at that Lock's next acquire(), refresh() or release() instead of thrown). An unknown option or a bad
 * value is a {@see \Deadbolt\Exception\InvalidArgumentException} naming the option, never the password.
 *
 * A DSN store uses one connection per process and DSN, shared by every store and factory built with the same DSN
 * and kept across requests (FPM). After pcntl_fork() the child opens a connection of its own and never writes to
 * the parent's. A connection found dead (server restart) is replaced and the call retried once, so the same store
 * and Lock objects work again once Redis is back. Client objects (`\Redis`, `\RedisCluster`,
 * `\Predis\ClientInterface`) are used through their own methods (EVALSHA, then EVAL when the script is not cached);
 * after a fork, do not share them between parent and child (that is their rule, not Deadbolt's).
 *
 * Cost: a Lock with a TTL acquires in one round trip (one EVALSHA) and releases in one; refresh() is one.
 * symfony/lock 5.4 spends four per acquire + release.
 *
 * Data model, identical to symfony/lock >= 5.2: the Redis key is the resource itself (a client-side prefix
 * applies), holding a sorted set of owner tokens plus the member `__write__` for an exclusive lock; scores are
 * expiry times in milliseconds of the server's clock, and the key expires (PEXPIREAT) with its last member. So
 * Deadbolt and symfony/lock processes exclude each other, readers share with readers of either library, and a
 * Key's token can pass from one library to the other (see {@see Key::__serialize()}). A plain string at the key (a
 * lock written by symfony/lock <= 5.1) counts as held by someone else; any other type (hash, list...) is a
 * {@see \Deadbolt\Exception\LockStorageException} naming the type.
 *
 * Locks expire: save() and saveRead() give the key `$initialTtl`; a Lock saves with its own TTL instead; the Key's
 * lifetime follows (see {@see Key::getRemainingLifetime()}). Use maxmemory-policy noeviction for lock data: on the
 * first connection of a process Deadbolt asks `CONFIG GET maxmemory-policy` and, when it is allkeys-* or
 * volatile-*, sends one warning to PHP's error_log (and to the Lock's logger, level "warning", when the call came
 * through a Lock that has one). Where CONFIG is refused, nothing is said.
 *
 * Errors (server down, timeout, wrong password, script error) are {@see \Deadbolt\Exception\LockStorageException}
 * from these methods; a Lock wraps them (LockAcquiringException, LockReleasingException). Messages name the
 * endpoint as `redis://host:port/db` (or the client class and host:port), never the user or the password.
 * Neither var_dump() nor print_r() of a store shows its DSN.
 *
 * A Lock that dies while held is released during PHP's destructor phase through any store; after a fatal error only
 * DSN stores still release (from the extension itself), client-object stores then rely on the TTL.
 */
final class RedisStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    /**
     * @param string|\Redis|\RedisCluster|\Predis\ClientInterface $connection a DSN (see above) or a connected client
     * @param float                                                 $initialTtl seconds a bare save()/saveRead() keeps
     *                                                                          the lock (symfony/lock's $initialTtl)
     *
     * @throws \TypeError                                   when $connection is neither a string nor a supported client
     * @throws \Deadbolt\Exception\InvalidArgumentException for a malformed DSN or a bad option (named, never the
     *                                                      password), or an unset password_env variable
     * @throws \Deadbolt\Exception\InvalidTtlException      when $initialTtl is zero, negative, NaN or INF
     */
    public function __construct(#[\SensitiveParameter] mixed $connection, float $initialTtl = 300.0)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key for $initialTtl seconds; also promotes $key when it is the only reader.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock (or a legacy string lock)
     * @throws \Deadbolt\Exception\LockExpiredException    when the lock had already expired once saved (it is removed)
     * @throws \Deadbolt\Exception\LockStorageException    when Redis fails or the key is not a lock
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes a shared (read) lock for $key for $initialTtl seconds; demotes $key when it is the writer.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the exclusive lock
     * @throws \Deadbolt\Exception\LockExpiredException    when the lock had already expired once saved (it is removed)
     * @throws \Deadbolt\Exception\LockStorageException    when Redis fails or the key is not a lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key, waiting until it is free.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when Redis fails or the key is not a lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes a shared (read) lock for $key, waiting until no writer holds it.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when Redis fails or the key is not a lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Extends the lock held by $key to $ttl seconds from now (in Redis) and reduces the Key's lifetime to $ttl.
     *
     * @param float $ttl seconds
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is zero, negative, NaN or INF
     * @throws \Deadbolt\Exception\LockConflictedException when $key does not hold the lock
     * @throws \Deadbolt\Exception\LockStorageException    when Redis fails or the key is not a lock
     */
    public function putOffExpiration(Key $key, float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the lock held by $key (its token, and `__write__` when it was the writer); does nothing when $key
     * does not hold it.
     *
     * @throws \Deadbolt\Exception\LockStorageException when Redis fails or the key is not a lock
     */
    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key owns a live (unexpired) lock (not whether anyone does).
     *
     * @throws \Deadbolt\Exception\LockStorageException when Redis fails or the key is not a lock
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Who holds $resource and who waits for it, for an operator. Throws InvalidArgumentException for a store that
     * cannot tell (a CombinedStore over a store written in PHP).
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases $resource whoever holds it: an operator's action, counted in metrics (force_released). Its holders find
     * the lock gone at their next call (refresh() throws LockExpiredException, isLost() turns true); fencing tokens
     * keep growing; the longest waiter gets it (Redis). flock: the lock file is removed (a symfony/lock holder is not
     * told).
     *
     * @return int how many holders it had
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a RedisStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): RedisStore
    {
    }
}
