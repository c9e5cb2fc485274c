<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks as MySQL/MariaDB user-level locks (GET_LOCK), on the names symfony/lock's MysqlStore (8.2) takes (the SHA-256
 * of the resource, in hex): a Deadbolt process and a symfony/lock process on one server exclude each other. PHP's
 * class names are case-insensitive: `MySqlStore` names this class too.
 *
 * ```php
 * $store = new \Deadbolt\Store\MysqlStore('mysql:host=db;dbname=app', ['db_username' => 'app', 'db_password' => $pw]);
 * $store = new \Deadbolt\Store\MysqlStore($pdo);                      // the application's \PDO (driver mysql)
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42');
 * ```
 *
 * - A DSN: each process makes its own \PDO on its first lock, and every lock of this store in the process lives in that
 *   session (the store keeps its keys apart: the server would grant a session a name it holds again). A forked child
 *   makes its own and releases nothing of its parent's; the parent's connection is out of the child's reach, so the
 *   child's end never closes it. The application's \PDO: its session, as it is (a child forked with it shares it).
 * - Locks never expire: a lock lives until it is released or its session ends. A killed process's locks are freed at
 *   once. A session that ends under a holder (the server restarted or failed over, an administrator's KILL, the
 *   network dropped it, wait_timeout) frees its locks: the holder's next call sees it, isAcquired() is false and
 *   refresh() throws LockExpiredException ("was lost"), after which isLost() is true. A \PDO made from the DSN is made
 *   again after a lost connection; its locks are not.
 * - PHP-FPM: a lock not released by the end of the request is released by the Lock's destructor, as elsewhere; the
 *   worker keeps its connection for the next request.
 * - Waits are the server's (GET_LOCK with the seconds left before the deadline); while a signal handler may need to
 *   run (pcntl_async_signals), a wait asks in slices of 100 ms. A lock this process's session holds for another key
 *   is waited for by polling (the server would grant it to the session again).
 * - Reached through PHP's \PDO, so on PHP's thread only: autoRefresh is not needed (nothing expires) and a
 *   CombinedStore calls it on PHP's thread.
 * - No read locks (GET_LOCK is exclusive: saveRead() takes an exclusive lock), no fencing tokens, no inspect() or
 *   forceRelease() (performance_schema.metadata_locks and KILL are the operator's tools). The DSN must reach the
 *   server itself, not a proxy that hands sessions to other clients. MySQL 5.7.5+ or MariaDB 10.0.2+ (several names
 *   per session).
 */
final class MysqlStore implements BlockingStoreInterface
{
    /**
     * @param \PDO|string          $connOrDsn a \PDO of the mysql driver in exception mode (PHP 8's default), or PDO's DSN
     *                                        mysql:host=HOST;port=PORT;dbname=DB (also mysql:unix_socket=PATH;...), or
     *                                        mysql+advisory:... as symfony/lock's StoreFactory writes it
     * @param array<string, mixed> $options   symfony/lock's db_username, db_password, db_connection_options (the \PDO
     *                                        constructor's $options); any other is refused
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for a DSN or \PDO of another database, a \PDO that does not
     *                                                      throw, an unknown option (no message repeats a DSN or a
     *                                                      password)
     */
    public function __construct(#[\SensitiveParameter] mixed $connOrDsn, #[\SensitiveParameter] ?array $options = null)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting (it never expires).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key or session holds the lock
     * @throws \Deadbolt\Exception\LockStorageException    when the server cannot be reached
     * @throws \PDOException                                when the server refuses the statement (as symfony/lock's)
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * As save(): a read lock is an exclusive one here (GET_LOCK has no shared mode).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key or session holds the lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key, waiting in the server (GET_LOCK).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * As waitAndSave(): a read lock is an exclusive one here.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Checks that $key still holds its lock (user-level locks never expire, so nothing is extended).
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is not a positive number of seconds
     * @throws \Deadbolt\Exception\LockConflictedException when $key does not hold the lock (any more)
     */
    public function putOffExpiration(Key $key, float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the lock held by $key; does nothing when $key does not hold it (another key of the session may).
     */
    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key holds the lock (not whether anyone does): $key took it in this process's session, and the server
     * still counts it as that session's.
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Not offered by this store: throws InvalidArgumentException (performance_schema.metadata_locks shows holders).
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Not offered by this store: throws InvalidArgumentException (KILL ends a holder's session).
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a MysqlStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): MysqlStore
    {
    }
}
