<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * A store's semaphores at symfony/semaphore's store level, for code (and symfony/semaphore's own store tests) written
 * against its PersistingStoreInterface. Made from the same store objects as locks:
 *
 * ```php
 * $store = new \Deadbolt\Semaphore\SemaphoreStore(new \Deadbolt\Store\RedisStore($redis));
 * $store->save(new \Deadbolt\Semaphore\Key('exports', 4), 30.0);
 * ```
 *
 * A SemaphoreFactory takes it as well as the store object itself.
 */
final class SemaphoreStore implements PersistingStoreInterface
{
    /**
     * @param object $store a Deadbolt\Store\RedisStore, FlockStore or InMemoryStore, or an object implementing
     *                      Deadbolt\Semaphore\PersistingStoreInterface (called through its methods)
     *
     * @throws Exception\InvalidArgumentException for a store that keeps no semaphores
     */
    public function __construct(object $store)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @throws Exception\SemaphoreAcquiringException when there is no room (symfony/semaphore's message)
     * @throws Exception\InvalidArgumentException     for a TTL that is not positive and finite
     */
    public function save(Key $key, float $ttlInSecond): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @throws Exception\SemaphoreExpiredException when the key holds no slot (symfony/semaphore's message)
     */
    public function putOffExpiration(Key $key, float $ttlInSecond): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function delete(Key $key): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function exists(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
