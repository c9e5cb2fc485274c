<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Console;

use Symfony\Component\Console\Command\LockableTrait;
use Symfony\Component\Lock\LockFactory;

/**
 * What a console command that uses Symfony's LockableTrait does, without the rest of symfony/console: the trait's own
 * lock() and release(), with the LockFactory that Symfony 7.1+ lets a command set ($lockFactory), here one on
 * Deadbolt's engine.
 */
final class LockedCommand
{
    use LockableTrait;

    public function __construct(LockFactory $lockFactory)
    {
        $this->lockFactory = $lockFactory;
    }

    public function start(string $name, bool $blocking = false): bool
    {
        return $this->lock($name, $blocking);
    }

    public function finish(): void
    {
        $this->release();
    }

    /** The lock the trait holds, for the test to look at. */
    public function heldLock(): ?\Symfony\Component\Lock\LockInterface
    {
        return $this->lock;
    }
}
