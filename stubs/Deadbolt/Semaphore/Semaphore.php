<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * symfony/semaphore's Semaphore on Deadbolt's engine: at most `limit` weight held at once, on a RedisStore (with
 * symfony/semaphore's data: both libraries count the same slots), a FlockStore (one host) or an InMemoryStore.
 * Beyond symfony/semaphore: `acquire(true, timeout: 2.0)` waits, and is handed freed weight first come, first served
 * (a heavy waiter is not overtaken by lighter ones behind it); the background refresher (`autoRefresh`), `isLost()`,
 * fork safety (a forked child neither holds nor releases its parent's slot), metrics and the logger, as for locks.
 *
 * ```php
 * $factory = new \Deadbolt\Semaphore\SemaphoreFactory(new \Deadbolt\Store\RedisStore('redis://127.0.0.1:6379'));
 * $export = $factory->createSemaphore('reports:export', limit: 4);
 * if ($export->acquire(true, timeout: 30.0)) {
 *     try { export(); } finally { $export->release(); }
 * }
 * ```
 */
final class Semaphore implements SemaphoreInterface
{
    /**
     * As symfony/semaphore's constructor; usually made by SemaphoreFactory.
     *
     * @param object $store a Deadbolt\Store\RedisStore, FlockStore or InMemoryStore, or an object implementing
     *                      Deadbolt\Semaphore\PersistingStoreInterface (called through its methods)
     */
    public function __construct(Key $key, object $store, ?float $ttlInSecond = 300.0, bool $autoRelease = true)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Any PSR-3 logger: an object with `log($level, $message, array $context)`. The messages are symfony/semaphore's.
     */
    public function setLogger(object $logger): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Takes the key's weight. `acquire()` answers at once (false when full, or when someone waits first);
     * `acquire(true)` waits until freed weight is handed to it, at most `$timeout` seconds (then false).
     *
     * @throws Exception\RuntimeException when the store fails
     */
    public function acquire(bool $blocking = false, ?float $timeout = null): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @throws Exception\SemaphoreExpiredException when the slot is gone (expired, released, lost)
     * @throws Exception\InvalidArgumentException for a TTL that is not a positive, finite number of seconds
     */
    public function refresh(?float $ttlInSecond = null): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function isAcquired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Gives the weight back; waiters get it in their order. Nothing when not held.
     *
     * @throws Exception\SemaphoreExpiredException when the background refresher found the slot lost
     */
    public function release(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * True once the background refresher found the slot gone (no network call).
     */
    public function isLost(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function isExpired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getRemainingLifetime(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @throws \BadMethodCallException always: a semaphore belongs to its process
     */
    public function __serialize(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @throws \BadMethodCallException always
     */
    public function __unserialize(array $data): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
