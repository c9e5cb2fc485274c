<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/** symfony/lock's BlockingSharedLockStoreInterface: a store that can wait for a read lock. */
interface BlockingSharedLockStoreInterface extends SharedLockStoreInterface
{
    /** Waits until no writer holds the lock of $key, then stores a read lock. */
    public function waitAndSaveRead(Key $key): void;
}
