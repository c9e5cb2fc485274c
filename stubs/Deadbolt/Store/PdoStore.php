<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks as rows of symfony/lock's lock table (PdoStore): a Deadbolt process and a symfony/lock process on one table
 * exclude each other. PostgreSQL, SQLite, MySQL/MariaDB (each tested against a real server and symfony/lock's
 * PdoStore), and SQL Server, Oracle (the same SQL as symfony/lock's, untested here).
 *
 * ```php
 * $store = new \Deadbolt\Store\PdoStore('pgsql:host=db;dbname=app;user=app;password_env=APP_DB_PASSWORD');
 * $store = new \Deadbolt\Store\PdoStore($pdo);                       // the application's \PDO
 * $store = new \Deadbolt\Store\PdoStore('sqlite:/var/lib/app/locks.db');
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42', ttl: 30.0, autoRefresh: true);
 * ```
 *
 * - symfony/lock's table: lock_keys (key_id: SHA-256 of the resource in hex, key_token, key_expiration: Unix seconds
 *   by the database's clock), names changeable with its db_* options; created on first use (outside a transaction),
 *   or by createTable(), with symfony/lock's DDL.
 * - Locks expire. A row is given whole seconds, rounded up, plus one (the database counts whole seconds, and
 *   PostgreSQL rounds its clock): in that last second or two no one can take the lock and its holder no longer counts
 *   as holding it. A TTL is at least a second, as symfony/lock requires.
 * - A lock that expired is lost, even if no one took it: refresh() throws LockConflictedException (symfony/lock's
 *   putOffExpiration() would take the row back). A killed holder's lock ends with its TTL.
 * - The connection: a pgsql: DSN whose keys Deadbolt's own PostgreSQL client takes (host, port, dbname, user,
 *   password, password_env, sslmode, sslrootcert, connect_timeout, timeout, application_name; no
 *   db_connection_options) runs on a session of Deadbolt's own, one per process: the background refresher
 *   (autoRefresh) extends its locks, and a CombinedStore asks it alongside its other members. Any other DSN, and the
 *   application's \PDO, run through PHP's \PDO: no autoRefresh there (the refresher's thread cannot call PHP; call
 *   refresh()), and the store is called on PHP's thread only. A \PDO made from a DSN is made again in a forked child,
 *   and after its connection was lost (a server restart); the application's \PDO is used as it is, in exception mode
 *   (PHP 8's default), and never inside its transaction to create the table.
 * - Fork: a forked child never talks on, nor closes, its parent's connection of this store (PHP frees the child's
 *   copy of the parent's \PDO when the child ends: its socket is /dev/null there).
 * - Waits poll (90-110 ms apart): a table tells no one of a release. Read locks are exclusive (a row has one token).
 *   No fencing tokens (the shared table has no column for them). inspect() and forceRelease() read and delete the row.
 * - A server restart keeps a committed row: its holder still holds it afterwards. A row the database lost (a
 *   failover to a replica behind, asynchronous commit and a crash, a restore) is a lost lock at its holder's next call.
 */
final class PdoStore implements BlockingStoreInterface
{
    /**
     * @param \PDO|string          $connOrDsn     a \PDO in exception mode, or a PDO DSN: pgsql:..., mysql:..., sqlite:...,
     *                                            sqlsrv:..., oci:... (Doctrine DBAL's URLs are refused)
     * @param array<string, mixed> $options       symfony/lock's db_table (SCHEMA.TABLE allowed), db_id_col,
     *                                            db_token_col, db_expiration_col (plain SQL identifiers), db_username,
     *                                            db_password, db_connection_options (the \PDO constructor's $options)
     * @param float                $gcProbability the chance that a save also removes every expired row (0 to 1)
     * @param float                $initialTtl    the lifetime save() gives a lock, in seconds (at least 1; 300)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for a DSN or \PDO this store cannot use (the message never
     *                                                      repeats a DSN), an unknown option or a name that is no
     *                                                      plain identifier, a probability outside 0 to 1
     * @throws \Deadbolt\Exception\InvalidTtlException     for an initial TTL under a second
     */
    public function __construct(
        #[\SensitiveParameter] mixed $connOrDsn,
        #[\SensitiveParameter] ?array $options = null,
        float $gcProbability = 0.01,
        float $initialTtl = 300.0,
    ) {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Creates the lock table with symfony/lock's DDL for the database.
     *
     * @throws \PDOException when the database refuses (the table exists, no right to): as symfony/lock's, with the
     *                       SQLSTATE as its code; LockStorageException when it cannot be reached
     */
    public function createTable(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting, for $initialTtl seconds: a free row, an expired one, or its own.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     * @throws \Deadbolt\Exception\LockStorageException    when the database cannot be reached
     * @throws \PDOException                                when the database refuses the statement (as symfony/lock's)
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * As save(): a read lock is an exclusive one here (a row has one token).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key, polling (90-110 ms apart) until it is free.
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
     * Extends $key's row to $ttl seconds, while it has not expired (an expired lock is never revived).
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is under a second, NaN or INF
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
     * Whether $key holds the lock (not whether anyone does): its row carries $key's token and has not expired, and
     * $key's own lifetime has not run out.
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Who holds $resource (an operator's view): its unexpired row's holder, by its token's digest, and when the row
     * expires (the table records nothing more of who). No one waits in a table.
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases $resource whoever holds it (deletes its unexpired row): 1, or 0 when no one held it. The holder finds
     * the lock lost at its next call.
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a PdoStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): PdoStore
    {
    }
}
