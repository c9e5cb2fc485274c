<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/** symfony/lock's SharedLockStoreInterface: a store of read locks besides write locks. */
interface SharedLockStoreInterface extends PersistingStoreInterface
{
    /** Stores a read lock of $key; a writer holds it -> LockConflictedException. */
    public function saveRead(Key $key): void;
}
