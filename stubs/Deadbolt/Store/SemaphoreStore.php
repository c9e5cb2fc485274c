<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks on System V semaphores, on the very semaphore sets symfony/lock's SemaphoreStore uses: a Deadbolt process and a
 * symfony/lock process on one host exclude each other. One host only (the kernel's semaphores are not shared).
 *
 * ```php
 * $factory = new \Deadbolt\LockFactory(new \Deadbolt\Store\SemaphoreStore());
 * $lock = $factory->createLock('invoice:42');
 * $lock->acquire(true, timeout: 5.0); // waits in the kernel, woken by the release
 * ```
 *
 * - The semaphore set of a resource is found by an IPC key that symfony/lock derives from the resource's name: from its
 *   xxh128 digest since symfony/lock 6.0 (the default, $keyHash 'xxh128'), from its md5 digest in symfony/lock 5.4
 *   ($keyHash 'md5'). A fleet mixing Deadbolt and symfony/lock 5.4 passes 'md5'; the two derivations are two locks.
 * - Locks never expire: a lock lives until it is released or its process ends (the kernel then frees it, also after
 *   SIGKILL). A forked child inherits no hold: its exit frees nothing of its parent's.
 * - A release removes the set, as symfony/lock's does; waiters, woken at once, take the next set.
 * - Read locks are exclusive (a semaphore set has no readers), as symfony/lock's Lock makes them on a store without
 *   shared locks. No fencing tokens, no holder records: the kernel keeps two counters and the last pid, nothing else.
 * - A Key holding a lock here cannot be serialized (the hold belongs to this process).
 */
final class SemaphoreStore implements BlockingStoreInterface
{
    /**
     * @param string $keyHash 'xxh128' (symfony/lock 6.0 and later) or 'md5' (symfony/lock 5.4)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for another $keyHash
     */
    public function __construct(string $keyHash = 'xxh128')
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting: exclusive, since a semaphore set has no readers.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key, waiting in the kernel until it is released.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key (exclusive), waiting in the kernel until it is released.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Checks that $key holds the lock; does nothing to the Key's lifetime, since these locks never expire (as in
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
     * Releases the lock held by $key (removes the semaphore set); does nothing when $key does not hold it.
     */
    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key owns the lock (not whether anyone does): false once the set was removed by someone else.
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Who holds $resource (the holder's pid, as the kernel last saw it change the semaphore) and how many wait (the
     * kernel does not say who), for an operator.
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases $resource whoever holds it by removing its semaphore set: an operator's action, counted in metrics
     * (force_released). A Deadbolt holder finds the lock gone at its next call; a symfony/lock holder is not told.
     *
     * @return int how many holders it had
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a SemaphoreStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): SemaphoreStore
    {
    }
}
