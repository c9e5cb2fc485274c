<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/** symfony/lock's BlockingStoreInterface: a store that can wait for a lock. */
interface BlockingStoreInterface extends PersistingStoreInterface
{
    /** Waits until the lock of $key is free, then stores it. */
    public function waitAndSave(Key $key): void;
}
