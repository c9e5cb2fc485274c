<?php

declare(strict_types=1);

namespace Deadbolt\Store;

use Deadbolt\Key;

/**
 * symfony/lock's PersistingStoreInterface, under Deadbolt's name: every Deadbolt store implements it (and the blocking
 * and shared interfaces beside it).
 */
interface PersistingStoreInterface
{
    /** Stores the lock of $key; held by someone else -> LockConflictedException. */
    public function save(Key $key): void;

    /** Removes the lock of $key, if it holds it. */
    public function delete(Key $key): void;

    /** Whether $key holds the lock. */
    public function exists(Key $key): bool;

    /** Extends the lock of $key by $ttl seconds. */
    public function putOffExpiration(Key $key, float $ttl): void;
}
