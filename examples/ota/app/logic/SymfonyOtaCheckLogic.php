<?php

declare(strict_types=1);

namespace app\logic;

use app\support\SymfonyOtaLockFactory;
use Deadbolt\LockInterface;
use Symfony\Component\Lock\LockInterface as SymfonyLockInterface;

/**
 * {@see OtaCheckLogic} with its locks typed as symfony/lock's (seed 001's plan), through the Deadbolt bridge: the same
 * service, for a codebase that types against Symfony's interfaces.
 */
class SymfonyOtaCheckLogic extends OtaCheckLogic
{
    protected function createLock(string $resource): LockInterface|SymfonyLockInterface
    {
        return SymfonyOtaLockFactory::create($resource, (float) self::LOCK_TTL_SECONDS);
    }
}
