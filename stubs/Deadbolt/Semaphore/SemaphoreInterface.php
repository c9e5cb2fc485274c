<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * symfony/semaphore's SemaphoreInterface: at most a limit of weight held on one resource at once.
 */
interface SemaphoreInterface
{
    /**
     * Takes the key's weight; false when there is no room.
     */
    public function acquire(): bool;

    /**
     * Puts the slot's expiry off by $ttlInSecond (or the semaphore's TTL).
     *
     * @throws Exception\SemaphoreExpiredException when the slot is gone
     */
    public function refresh(?float $ttlInSecond = null): void;

    public function isAcquired(): bool;

    public function release(): void;

    public function isExpired(): bool;

    public function getRemainingLifetime(): ?float;
}
