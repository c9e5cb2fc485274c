<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * Deadbolt's: a lock that hands out fencing tokens, integers that strictly increase in the order of its holds.
 */
interface FencedLockInterface
{
    /** The token of the current exclusive hold, or null when the lock is not held exclusively. */
    public function getFencingToken(): ?int;
}
