<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * A lock held by a quorum of independent stores, typically one {@see RedisStore} per Redis master (symfony/lock's
 * CombinedStore, same strategies, same data in each store: a fleet may run both side by side).
 *
 * ```php
 * $store = new \Deadbolt\Store\CombinedStore([
 *     new \Deadbolt\Store\RedisStore('redis://10.0.0.1:6379'),
 *     new \Deadbolt\Store\RedisStore('redis://10.0.0.2:6379'),
 *     new \Deadbolt\Store\RedisStore('redis://10.0.0.3:6379'),
 * ], new \Deadbolt\Strategy\ConsensusStrategy());
 * $lock = (new \Deadbolt\LockFactory($store))->createLock('invoice:42', 30.0);
 * ```
 *
 * Every store is asked at once: an acquire costs about one round trip to the slowest store, not one per store (the
 * stores Deadbolt talks to natively are asked on threads of their own; a store over a PHP client object, or one of
 * your own, is asked from PHP's thread meanwhile). With the consensus strategy the lock keeps working while a
 * minority of the stores is down; when the strategy cannot be met, whatever was taken is released everywhere and the
 * acquire fails. A lock whose acquisition took longer than its TTL is not held (symfony/lock's rule): it is released
 * and the acquire fails.
 *
 * Blocking acquires poll (as symfony/lock's does): there is no hand-over signal across independent masters, and no
 * fencing token (each master would count its own). The lock expires when any of its stores lets locks expire.
 */
final class CombinedStore implements SharedLockStoreInterface
{
    /**
     * @param array<PersistingStoreInterface|\Symfony\Component\Lock\PersistingStoreInterface> $stores   at least one
     * @param StrategyInterface|\Symfony\Component\Lock\Strategy\StrategyInterface                  $strategy Deadbolt's
     *        or symfony/lock's ConsensusStrategy or UnanimousStrategy (or a subclass of one)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException when $stores is empty or holds something that is no store
     * @throws \TypeError                                   when $strategy is not one of the four strategies
     */
    public function __construct(array $stores, mixed $strategy)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key in every store at once.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when too many stores have it held by another key
     * @throws \Deadbolt\Exception\LockStorageException    when too many stores failed (each is named, with why)
     * @throws \Deadbolt\Exception\LockExpiredException    when the lock expired before the stores had answered
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key in every store at once (the exclusive one in a store without read locks).
     *
     * @throws \Deadbolt\Exception\LockConflictedException when too many stores have a writer holding it
     * @throws \Deadbolt\Exception\LockStorageException    when too many stores failed
     * @throws \Deadbolt\Exception\LockExpiredException    when the lock expired before the stores had answered
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the exclusive lock for $key, polling until the strategy is met.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when too many stores failed
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the shared (read) lock for $key, polling until the strategy is met.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     * @throws \Deadbolt\Exception\LockStorageException    when too many stores failed
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Extends the lock in every store at once; the Key's lifetime follows the soonest expiry among them.
     *
     * @param float $ttl seconds
     *
     * @throws \Deadbolt\Exception\InvalidTtlException     when $ttl is zero, negative, NaN or INF
     * @throws \Deadbolt\Exception\LockConflictedException when too many stores no longer have $key holding the lock
     * @throws \Deadbolt\Exception\LockStorageException    when too many stores failed
     * @throws \Deadbolt\Exception\LockExpiredException    when the lock expired before the stores had answered
     */
    public function putOffExpiration(Key $key, float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases the lock held by $key in every store at once.
     *
     * @throws \Deadbolt\Exception\LockStorageException when so many stores failed that the strategy is met by them
     *                                                  (the lock may then outlive the call until its TTL)
     */
    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key owns the lock in enough stores for the strategy (a store that fails counts as not).
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
     * The code var_export() writes calls this, and it cannot rebuild a CombinedStore: the object's state lives in the
     * extension, not in its properties. Construct it again.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): CombinedStore
    {
    }
}
