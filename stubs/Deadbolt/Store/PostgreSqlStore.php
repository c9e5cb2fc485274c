<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks as PostgreSQL session-level advisory locks, on the keys symfony/lock's PostgreSqlStore takes (crc32 of the
 * resource): a Deadbolt process and a symfony/lock process on one database exclude each other, readers included.
 *
 * ```php
 * $store = new \Deadbolt\Store\PostgreSqlStore('pgsql:host=db;dbname=app;user=app;password_env=APP_DB_PASSWORD');
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42');
 * ```
 *
 * - Each process connects once, on its first lock, and every lock of this store in the process lives in that session
 *   (the store keeps its keys apart: PostgreSQL would grant a session its own lock again). A forked child connects on
 *   its own and releases nothing of its parent's.
 * - Locks never expire: a lock lives until it is released or its session ends. A killed process's locks are freed at
 *   once. A session that ends under a holder (the server restarted or failed over, an administrator ended it, the
 *   network dropped it, an exchange timed out) frees its locks: the holder's next call sees it, isAcquired() is false
 *   and refresh() throws LockExpiredException ("was lost"), after which isLost() is true.
 * - PHP-FPM: a lock not released by the end of the request is released by the Lock's destructor, as elsewhere; the
 *   worker keeps its connection for the next request. A long-running worker keeps one session for all its locks.
 * - Waits queue in the server (pg_advisory_lock), limited by the deadline through lock_timeout; while a signal handler
 *   may need to run (pcntl_async_signals), a wait queues in slices of 100 ms and asks in between.
 * - The DSN must reach PostgreSQL itself, or a pooler in session mode: a pooler in transaction mode (PgBouncer's
 *   pool_mode = transaction) would hand the session, and its locks, to other clients.
 * - No fencing tokens (nothing counts holds). Two resources whose crc32 is the same are one lock, as in symfony/lock.
 * - On the application's \PDO (pgsql driver, ERRMODE_EXCEPTION), the locks live in the application's own session: a
 *   wait queues in the server with a lock_timeout for that statement only, and polls inside the application's
 *   transaction (a lock timeout would abort it). Deadbolt never reconnects it: once the session ended, its locks read
 *   as lost. A forked child is refused the parent's connection, and a child that ends normally ends the parent's
 *   session (PHP's PDO says goodbye on the shared socket): a process that forks while it holds locks gives a DSN.
 */
final class PostgreSqlStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    /**
     * @param \PDO|string          $connOrDsn a \PDO of the pgsql driver in ERRMODE_EXCEPTION, or PDO's DSN,
     *                                        pgsql:host=HOST;port=PORT;dbname=DB[;user=USER][;sslmode=MODE]
     *                                        (what symfony/lock's PostgreSqlStore takes), or
     *                                        postgresql://USER[:PASSWORD]@HOST[:PORT]/DB[?KEY=VALUE&...]. Keys: host (a
     *                                        directory is a unix socket), port, dbname, user, password, password_env
     *                                        (the environment variable holding the password), sslmode (disable, allow,
     *                                        prefer: the default, require, verify-ca, verify-full; every TLS connection
     *                                        checks the server's certificate), sslrootcert, connect_timeout, timeout
     *                                        (one exchange; 5 s by default), application_name
     * @param array<string, mixed> $options   symfony/lock's db_username and db_password (the DSN's own win)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for a DSN this store cannot use (the message never repeats it),
     *                                                      an unknown option, or a \PDO of another driver or error mode;
     *                                                      a DSN of another database (sqlite:, mysql://) is refused at
     *                                                      the store's first call instead, as symfony/lock's
     */
    public function __construct(#[\SensitiveParameter] mixed $connOrDsn, #[\SensitiveParameter] ?array $options = null)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting, (it never expires).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     * @throws \Deadbolt\Exception\LockStorageException    when PostgreSQL cannot be reached
     * @throws \PDOException                                when PostgreSQL refuses the statement (as symfony/lock's)
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes a read lock for $key without waiting: readers (of both libraries) share it.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key, waiting in the server's queue.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes a read lock for $key, waiting in the server's queue for a writer to leave.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Checks that $key still holds its lock (advisory locks never expire, so nothing is extended).
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is not a positive number of seconds
     * @throws \Deadbolt\Exception\LockConflictedException when $key does not hold the lock (any more)
     */
    public function putOffExpiration(Key $key, float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the lock held by $key; does nothing when $key does not hold it.
     */
    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key holds the lock (not whether anyone does): $key took it in this process's session, and the session
     * lives (asked of the server).
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Not offered by this store: throws InvalidArgumentException (pg_locks shows holders' sessions to an operator).
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Not offered by this store: throws InvalidArgumentException (pg_terminate_backend() ends a holder's session).
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a PostgreSqlStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): PostgreSqlStore
    {
    }
}
