<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * symfony/lock's SharedLockInterface: a lock that may also be held for reading, by several holders at once.
 */
interface SharedLockInterface extends LockInterface
{
    /**
     * Takes the lock for reading; with $blocking, waits until no writer holds it.
     *
     * @return bool whether the lock is held now
     */
    public function acquireRead(bool $blocking = false): bool;
}
