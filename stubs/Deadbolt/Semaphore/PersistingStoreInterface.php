<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * symfony/semaphore's PersistingStoreInterface: a store's semaphores, one Key at a time.
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
