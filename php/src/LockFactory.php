<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

use Deadbolt\LockFactory as DeadboltLockFactory;
use Deadbolt\Store\BlockingSharedLockStoreInterface as DeadboltStoreInterface;
use Psr\Log\LoggerInterface;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\SharedLockInterface;

/**
 * symfony/lock's LockFactory whose locks are Deadbolt's native locks ({@see NativeLock}): where code takes a Symfony
 * LockFactory (or LockInterface, or SharedLockInterface), this one line switches it to Deadbolt's engine:
 *
 * ```php
 * $factory = new \Deadbolt\Bridge\Symfony\LockFactory(new \Deadbolt\Store\RedisStore($dsn));
 * $lock = $factory->createLock('report', 60.0); // a Symfony SharedLockInterface
 * ```
 *
 * Beyond Symfony's arguments, createLock() takes Deadbolt's $autoRefresh and $maxHold.
 */
class LockFactory extends SymfonyLockFactory
{
    private readonly DeadboltLockFactory $deadbolt;

    private readonly DeadboltStore $adapter;

    public function __construct(DeadboltStoreInterface $store)
    {
        $this->adapter = new DeadboltStore($store);
        parent::__construct($this->adapter);
        $this->deadbolt = new DeadboltLockFactory($store);
    }

    public function createLock(string $resource, ?float $ttl = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): SharedLockInterface
    {
        return Exceptions::symfony(fn (): NativeLock => new NativeLock($this->deadbolt->createLock($resource, $ttl, $autoRelease, $autoRefresh, $maxHold)));
    }

    /**
     * A lock on $key's resource with $key's token (kept in $key's state, as the Key travels: Symfony's Messenger
     * serializes it). Its lifetime is the lock's: ask the lock, not $key.
     */
    public function createLockFromKey(Key $key, ?float $ttl = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): SharedLockInterface
    {
        return Exceptions::symfony(fn (): NativeLock => new NativeLock($this->deadbolt->createLockFromKey($this->adapter->deadboltKey($key), $ttl, $autoRelease, $autoRefresh, $maxHold)));
    }

    /** Deadbolt's locks log through it (symfony/lock's messages and levels, with Deadbolt's figures added). */
    public function setLogger(LoggerInterface $logger): void
    {
        parent::setLogger($logger);
        $this->deadbolt->setLogger($logger);
    }
}
