<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * Deadbolt's: a lock whose waits can end at a deadline, $timeout seconds after the call (symfony/lock has none).
 */
interface DeadlineLockInterface extends SharedLockInterface
{
    /**
     * As {@see LockInterface::acquire()}; with $timeout, waits at most that long and returns false after it.
     */
    public function acquire(bool $blocking = false, ?float $timeout = null): bool;

    /**
     * As {@see SharedLockInterface::acquireRead()}; with $timeout, waits at most that long.
     */
    public function acquireRead(bool $blocking = false, ?float $timeout = null): bool;
}
