<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;

/**
 * symfony/lock's own Lock on Deadbolt's store, made by the bridge's StoreFactory from a `deadbolt+` DSN, excludes
 * symfony/lock's own store of the same backend, both ways.
 */
trait SymfonyThroughTheBridge
{
    /**
     * The bridge's DSN of the Deadbolt store under test (`deadbolt+...`).
     */
    abstract protected function bridgedDsn(): string;

    /**
     * A lock of symfony/lock's own store of the same backend.
     */
    abstract protected function symfonyLock(string $resource): SymfonyLock;

    public function testSymfonysLockOnDeadboltsStoreThroughTheBridgeExcludesSymfonysOwnStore(): void
    {
        $resource = uniqid(__METHOD__, true);
        $bridged = \Deadbolt\Bridge\Symfony\StoreFactory::createStore($this->bridgedDsn());
        $this->assertInstanceOf(\Deadbolt\Bridge\Symfony\DeadboltStore::class, $bridged);
        $onDeadbolt = (new SymfonyLockFactory($bridged))->createLock($resource, 30.0);
        $native = $this->symfonyLock($resource);
        $this->assertTrue($onDeadbolt->acquire());

        $this->assertFalse($native->acquire(false));
        $onDeadbolt->release();
        $this->assertTrue($native->acquire(false));
        $this->assertFalse($onDeadbolt->acquire(false));
        $native->release();
    }
}
