<?php

declare(strict_types=1);

namespace Deadbolt\Strategy;

/**
 * Every store must hold the lock (symfony/lock's UnanimousStrategy): one store down or held elsewhere, and the lock
 * is not held.
 */
final class UnanimousStrategy implements StrategyInterface
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function isMet(int $numberOfSuccess, int $numberOfItems): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function canBeMet(int $numberOfFailure, int $numberOfItems): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
