<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * symfony/semaphore's SemaphoreFactory on one of Deadbolt's stores (the same RedisStore, FlockStore or InMemoryStore
 * objects as for locks), or on a store written in PHP (any object implementing {@see PersistingStoreInterface},
 * called through its methods); every semaphore it makes reports to its logger.
 */
class SemaphoreFactory
{
    /**
     * @param object $store a Deadbolt\Store\RedisStore, FlockStore or InMemoryStore, a SemaphoreStore, or an object
     *                      implementing Deadbolt\Semaphore\PersistingStoreInterface
     *
     * @throws Exception\InvalidArgumentException for a store that keeps no semaphores (a CombinedStore, a lock store
     *                                            written in PHP)
     */
    public function __construct(object $store)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * `$autoRefresh`: the background refresher puts the slot off while it is held; `$maxHold`: seconds after which it
     * stops and the slot runs out.
     */
    public function createSemaphore(string $resource, int $limit, int $weight = 1, ?float $ttlInSecond = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): Semaphore
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function createSemaphoreFromKey(Key $key, ?float $ttlInSecond = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): Semaphore
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function setLogger(object $logger): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
