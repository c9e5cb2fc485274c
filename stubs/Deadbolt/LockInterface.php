<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * symfony/lock's LockInterface, under Deadbolt's name: type against it (PHPUnit can double it) where any Deadbolt lock
 * will do. {@see Lock} implements it, with the additions of {@see DeadlineLockInterface} and {@see FencedLockInterface}.
 */
interface LockInterface
{
    /**
     * Takes the lock; with $blocking, waits until it is free.
     *
     * @return bool whether the lock is held now
     */
    public function acquire(bool $blocking = false): bool;

    /** Extends the lock's lifetime by $ttl seconds (the lock's own TTL when null). */
    public function refresh(?float $ttl = null): void;

    public function isAcquired(): bool;

    public function release(): void;

    public function isExpired(): bool;

    /** Seconds left, null when the lock does not expire. */
    public function getRemainingLifetime(): ?float;
}
