<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Keeps locks in this store object: they exclude each other only within one process and one store instance.
 *
 * Meant for tests and for code paths that need a lock API but no real exclusion.
 *
 * ```php
 * $factory = new \Deadbolt\LockFactory(new \Deadbolt\Store\InMemoryStore());
 * $lock = $factory->createLock('invoice:42');
 * $lock->acquire(); // true
 * $factory->createLock('invoice:42')->acquire(); // false
 * ```
 *
 * Blocking waits poll the store, so a blocking acquire on a lock held in the same process never returns.
 */
final class InMemoryStore implements BlockingStoreInterface, BlockingSharedLockStoreInterface
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key without waiting.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key without waiting.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the exclusive lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key, polling until it is free.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key, polling until no writer holds it.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Checks that $key holds the lock; does nothing to the Key's lifetime, since in-memory locks never expire (as in
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
     * The code var_export() writes calls this, and it cannot rebuild a InMemoryStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): InMemoryStore
    {
    }
}
