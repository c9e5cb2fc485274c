<?php

declare(strict_types=1);

namespace Deadbolt\Strategy;

/**
 * symfony/lock's StrategyInterface: when the answers of a {@see \Deadbolt\Store\CombinedStore}'s stores make a lock
 * held. Deadbolt's combined store takes its own two strategies and symfony/lock's two; a strategy of your own is
 * refused (its PHP would run for every count, while the stores are asked on threads of their own).
 */
interface StrategyInterface
{
    /** Whether $numberOfSuccess stores out of $numberOfItems holding the lock is enough. */
    public function isMet(int $numberOfSuccess, int $numberOfItems): bool;

    /** Whether, with $numberOfFailure stores out of $numberOfItems refusing, the lock can still be held. */
    public function canBeMet(int $numberOfFailure, int $numberOfItems): bool;
}
