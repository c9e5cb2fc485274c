<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * Locks in memcached, on the very items symfony/lock's MemcachedStore writes: a Deadbolt process and a symfony/lock
 * process on one memcached server exclude each other.
 *
 * ```php
 * $memcached = new \Memcached();
 * $memcached->addServer('127.0.0.1', 11211);
 * $factory = new \Deadbolt\LockFactory(new \Deadbolt\Store\MemcachedStore($memcached));
 * $lock = $factory->createLock('invoice:42', ttl: 30.0, autoRefresh: true);
 * ```
 *
 * - One item per lock: its key is the resource (after the \Memcached's OPT_PREFIX_KEY), its value the holder's token.
 *   Taken with add, extended with a compare-and-swap, released with a delete that applies only to the holder's item.
 * - From a \Memcached, the store reads its one server and its key prefix once, then talks to that server on a
 *   connection of its own (memcached's meta protocol over TCP), so that the background refresher can extend locks
 *   while PHP runs. A forked child makes a connection of its own on first use.
 * - Locks expire: a TTL is whole seconds (at least 1, as symfony/lock requires), rounded up; the item is given one
 *   second more than the lock's lifetime, because memcached's clock ticks once a second. In that second no one can
 *   take the lock and its holder no longer counts as holding it.
 * - A lock that expired, was evicted, or was lost in a server restart is lost: exists() is false, and a refresh throws
 *   LockConflictedException (symfony/lock's putOffExpiration would take it again). memcached is a cache: give it the
 *   memory its locks need, or an eviction frees a lock early.
 * - Waits poll (90-110 ms apart): memcached tells no one of a release. Read locks are exclusive (an item has one value).
 *   No fencing tokens (a counter item could be evicted and go back).
 * - Names with a space or a control character are stored under memcached's binary-key form (symfony/lock cannot lock
 *   such names); a key has at most 250 bytes with the prefix (186 in binary form).
 */
final class MemcachedStore implements BlockingStoreInterface
{
    /**
     * @param \Memcached|string $memcached  a \Memcached with exactly one TCP server, or
     *                                      memcached://HOST[:PORT][?timeout=SECONDS&prefix_key=PREFIX] (one server;
     *                                      timeout: connecting, and each command, 1 s by default)
     * @param float             $initialTtl the lifetime save() gives a lock, in seconds (at least 1; symfony/lock's
     *                                      default, 300)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for a DSN or a \Memcached this store cannot use (several
     *                                                      servers, a unix socket, credentials), or $initialTtl under
     *                                                      a second
     */
    public function __construct(#[\SensitiveParameter] mixed $memcached, float $initialTtl = 300.0)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting, for $initialTtl seconds.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     * @throws \Deadbolt\Exception\LockStorageException    when memcached cannot be reached
     */
    public function save(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key without waiting: exclusive, since an item has one value.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when another key holds the lock
     */
    public function saveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key, polling until it is free.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSave(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the lock for $key (exclusive), polling until it is free.
     *
     * @throws \Deadbolt\Exception\LockConflictedException when the wait ends without the lock
     */
    public function waitAndSaveRead(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Extends the lock of $key to $ttl seconds from now.
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
     * Whether $key holds the lock (not whether anyone does): its item holds $key's token and $key's lifetime has not
     * run out.
     */
    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Who holds $resource (the digest of the token in its item) and when the item expires, for an operator. memcached
     * keeps no record of the holder's host or pid, and no one waits in it.
     */
    public function inspect(string $resource): \Deadbolt\LockState
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases $resource whoever holds it by deleting its item: an operator's action, counted in metrics
     * (force_released). A Deadbolt holder finds the lock gone at its next call; a symfony/lock holder is not told.
     *
     * @return int how many holders it had (0 or 1)
     */
    public function forceRelease(string $resource): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this, and it cannot rebuild a MemcachedStore: the object's state lives in the
     * extension, not in its properties. Construct it again, or with {@see StoreFactory::createStore()}.
     *
     * @param array<string, mixed> $properties
     *
     * @throws \BadMethodCallException always
     */
    public static function __set_state(array $properties): MemcachedStore
    {
    }
}
