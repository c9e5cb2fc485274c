<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * Blocking acquire: it returns once another process released, and only then. Steps ordered by messages.
 */
final class LockBlockingTest extends DeadboltTestCase
{
    public function testBlockingAcquireWaitsForAForkedChildToRelease(): void
    {
        $this->assertParentWaitsForChild(uniqid(__METHOD__, true), 'acquire', 'acquire');
    }

    public function testBlockingAcquireReadWaitsForAWriterChild(): void
    {
        $this->assertParentWaitsForChild(uniqid(__METHOD__, true), 'acquire', 'acquireRead');
    }

    public function testBlockingAcquireWaitsForAReaderChild(): void
    {
        $this->assertParentWaitsForChild(uniqid(__METHOD__, true), 'acquireRead', 'acquire');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testBlockingAcquireOfAFreeLockReturnsTrue(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);

        $this->assertTrue($lock->acquire(true));
        $this->assertTrue($lock->isAcquired());
        $this->assertNull($lock->getRemainingLifetime(), 'the lock never expires on this store');
        $this->assertFalse($lock->isExpired());
    }

    public function testBlockingAcquireReadBesideAnotherReaderReturnsTrue(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $reader = $factory->createLock($resource);
        $reader->acquireRead();

        $this->assertTrue($factory->createLock($resource)->acquireRead(true));
    }

    private function assertParentWaitsForChild(string $resource, string $childMode, string $parentMode): void
    {
        $dir = $this->tempDir();
        $parentPid = posix_getpid();
        $child = $this->fork(function (Channel $parent) use ($dir, $resource, $childMode, $parentPid): void {
            $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource, 60.0);
            $this->assertTrue($lock->$childMode(false), 'the child takes the free lock');
            $parent->send('holding');
            $this->assertSame('waiting', $parent->receive());
            self::waitUntilSleeping($parentPid);
            $this->assertTrue($lock->isAcquired());
            $lock->release();
            $parent->send('released');
        });
        $this->assertSame('holding', $child->receive());

        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource, 60.0);
        $this->assertFalse($lock->$parentMode(false), 'the lock is held by the child');
        $child->send('waiting');

        $this->assertTrue($lock->$parentMode(true));

        $this->assertSame('released', $child->receive());
        $this->assertTrue($lock->isAcquired());
        $child->wait();
    }
}
