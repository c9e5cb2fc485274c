<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * symfony/semaphore's PersistingStoreInterface: a store's semaphores, one Key at a time.
 *
 * Implement it to write a semaphore store in PHP: SemaphoreFactory, Semaphore and SemaphoreStore take such an object
 * and call these methods (a waiting acquire polls save() every 90-110 ms). The store is handed one Key per owner for
 * as long as it may hold a slot, so it can keep its token there with setState(), and gives the Key its lifetime
 * with reduceLifetime(). Any exception other than the two below fails the call with a RuntimeException whose
 * previous exception is the store's own.
 */
interface PersistingStoreInterface
{
    /**
     * Takes the key's weight for $ttlInSecond.
     *
     * @throws Exception\SemaphoreAcquiringException when there is no room
     */
    public function save(Key $key, float $ttlInSecond): void;

    public function delete(Key $key): void;

    public function exists(Key $key): bool;

    /**
     * @throws Exception\SemaphoreExpiredException when the key holds no slot
     */
    public function putOffExpiration(Key $key, float $ttlInSecond): void;
}
