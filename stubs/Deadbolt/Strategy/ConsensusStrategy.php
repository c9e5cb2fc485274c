<?php

declare(strict_types=1);

namespace Deadbolt\Strategy;

/**
 * More than half of the stores must hold the lock (symfony/lock's ConsensusStrategy): with three Redis masters, two.
 * The lock survives the loss of a minority of the stores.
 */
final class ConsensusStrategy implements StrategyInterface
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
