<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

use Deadbolt\DeadlineLockInterface;
use Deadbolt\FencedLockInterface;
use Deadbolt\Lock;
use Symfony\Component\Lock\SharedLockInterface;

/**
 * A symfony/lock lock that is Deadbolt's native Lock underneath: code typed against Symfony's LockInterface or
 * SharedLockInterface gets one round trip each way, deadlines, hand-over to waiters, autoRefresh and fencing tokens.
 * Failures are symfony/lock's exceptions (Deadbolt's is the previous one). Made by {@see LockFactory}.
 *
 * Besides Symfony's methods: acquire() and acquireRead() take a $timeout (seconds), getFencingToken() and isLost()
 * are Deadbolt's, and lock() gives the Deadbolt Lock itself.
 */
final class NativeLock implements SharedLockInterface, DeadlineLockInterface, FencedLockInterface
{
    public function __construct(private readonly Lock $lock)
    {
    }

    public function acquire(bool $blocking = false, ?float $timeout = null): bool
    {
        return Exceptions::symfony(fn (): bool => $this->lock->acquire($blocking, $timeout));
    }

    public function acquireRead(bool $blocking = false, ?float $timeout = null): bool
    {
        return Exceptions::symfony(fn (): bool => $this->lock->acquireRead($blocking, $timeout));
    }

    public function refresh(?float $ttl = null): void
    {
        Exceptions::symfony(fn () => $this->lock->refresh($ttl));
    }

    public function isAcquired(): bool
    {
        return Exceptions::symfony(fn (): bool => $this->lock->isAcquired());
    }

    public function release(): void
    {
        Exceptions::symfony(fn () => $this->lock->release());
    }

    public function isExpired(): bool
    {
        return $this->lock->isExpired();
    }

    public function getRemainingLifetime(): ?float
    {
        return $this->lock->getRemainingLifetime();
    }

    public function getFencingToken(): ?int
    {
        return Exceptions::symfony(fn (): ?int => $this->lock->getFencingToken());
    }

    /** True once the background refresher found the lock gone. */
    public function isLost(): bool
    {
        return $this->lock->isLost();
    }

    /** The Deadbolt Lock underneath. */
    public function lock(): Lock
    {
        return $this->lock;
    }
}
