<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony\Semaphore;

use Deadbolt\Semaphore\Semaphore;
use Symfony\Component\Semaphore\Key;
use Symfony\Component\Semaphore\SemaphoreInterface;

/**
 * A symfony/semaphore semaphore that is Deadbolt's Semaphore underneath: code typed against Symfony's
 * SemaphoreInterface gets waits with a deadline and a first-come, first-served hand-over (`acquire(true, 2.0)`),
 * autoRefresh and isLost(). Failures are symfony/semaphore's exceptions. Made by {@see SemaphoreFactory}.
 */
final class NativeSemaphore implements SemaphoreInterface
{
    public function __construct(private readonly Semaphore $semaphore, private readonly Key $key)
    {
    }

    public function acquire(bool $blocking = false, ?float $timeout = null): bool
    {
        return Exceptions::symfony($this->key, fn (): bool => $this->semaphore->acquire($blocking, $timeout));
    }

    public function refresh(?float $ttlInSecond = null): void
    {
        Exceptions::symfony($this->key, fn () => $this->semaphore->refresh($ttlInSecond));
    }

    public function isAcquired(): bool
    {
        return Exceptions::symfony($this->key, fn (): bool => $this->semaphore->isAcquired());
    }

    public function release(): void
    {
        Exceptions::symfony($this->key, fn () => $this->semaphore->release());
    }

    public function isExpired(): bool
    {
        return $this->semaphore->isExpired();
    }

    public function getRemainingLifetime(): ?float
    {
        return $this->semaphore->getRemainingLifetime();
    }

    /** True once the background refresher found the slot gone. */
    public function isLost(): bool
    {
        return $this->semaphore->isLost();
    }

    /** The Deadbolt Semaphore underneath. */
    public function semaphore(): Semaphore
    {
        return $this->semaphore;
    }
}
