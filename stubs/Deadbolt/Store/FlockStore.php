<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks with flock(2) on files in one directory, interoperable with symfony/lock's FlockStore.
 *
 * ```php
 * $store = new \Deadbolt\Store\FlockStore('/var/lock/app');
 * $factory = new \Deadbolt\LockFactory($store);
 * $lock = $factory->createLock('invoice:42');
 * ```
 *
 * A resource maps to the file "sf.<slug>.<hash>.lock", the same name symfony/lock uses, so a Deadbolt process
 * and a symfony/lock process working in the same directory exclude each other. Files are created empty with mode
 * 0666 and stay after release. Locks belong to the process that took them and vanish when it exits; they do not
 * expire, a TTL only sets the Key's lifetime. Two Keys exclude each other even inside one process.
 */
final class FlockStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    /**
     * @param string|null $lockPath directory of the lock files, created recursively if missing;
     *                              null for sys_get_temp_dir()
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException when the directory cannot be created or is not writable;
     *                                                      the message contains the path
     */
    public function __construct(?string $lockPath = null)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key without waiting.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     * @throws \Deadbolt\Exception\LockStorageException    when the lock file cannot be opened
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key without waiting.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the exclusive lock
     * @throws \Deadbolt\Exception\LockStorageException    when the lock file cannot be opened
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key, waiting until it is free.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when the lock file cannot be opened
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key, waiting until no writer holds it.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when the lock file cannot be opened
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Checks that $key holds the lock; does nothing to the Key's lifetime, since flock locks never expire (as in
     * symfony/lock).
     *
     * @param float $ttl seconds; validated, otherwise unused
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is zero, negative, NaN or INF
     * @throws \Deadbolt\Exception\LockConflictedException when $key does not hold the lock (unlike symfony/lock)
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
     * Whether $key owns the lock (not whether anyone does).
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
     * The code var_export() writes calls this, and it cannot rebuild a FlockStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): FlockStore
    {
    }
}
