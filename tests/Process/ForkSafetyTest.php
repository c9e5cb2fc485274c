<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * After pcntl_fork(), a Lock inherited by the child is inert (symfony/lock #40325 is the bug this prevents).
 * A third, fresh php process is the judge of who holds the lock.
 */
final class ForkSafetyTest extends DeadboltTestCase
{
    /**
     * @return iterable<string, array{'acquire'|'acquireRead'}>
     */
    public static function modes(): iterable
    {
        yield 'write lock' => ['acquire'];
        yield 'read lock' => ['acquireRead'];
    }

    /**
     * @dataProvider modes
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modes')]
    public function testForkedChildCannotReleaseParentLock(string $mode): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource, 300.0, true);
        $this->assertTrue($lock->$mode());

        $child = $this->fork(function (Channel $parent) use ($lock): void {
            $this->assertFalse($lock->isAcquired(), 'an inherited lock is not acquired in the child');
            $lock->release();
            // Leaving: exit() destroys the child's copy of the Lock, with autoRelease on.
        });
        $child->wait();

        $this->assertTrue($lock->isAcquired(), 'the parent still holds its lock');
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource, 'write'), 'a third process cannot take it');
        $lock->release();
        $this->assertTrue(PhpProcess::canAcquire($dir, $resource, 'write'), 'free after the parent released');
    }

    public function testForkedChildCanAcquireOnItsOwnAfterTheParentReleases(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);
        $lock->acquire();

        // The child is alive and holds a copy of the parent's handle while the parent releases.
        $child = $this->fork(static function (Channel $parent) use ($dir, $resource): void {
            $parent->send('forked');
            $parent->receive();
            $own = (new LockFactory(new FlockStore($dir)))->createLock($resource);
            $parent->send($own->acquire(false) ? 'acquired' : 'refused');
            $parent->receive();
            $own->release();
        });
        $this->assertSame('forked', $child->receive());
        $lock->release();
        $child->send('released');

        $this->assertSame('acquired', $child->receive(), 'the parent\'s release freed the lock although the child lives');
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource), 'the child holds it now');
        $this->assertFalse($lock->acquire(false), 'the parent cannot take it back');
        $child->send('done');
        $child->wait();
        $this->assertTrue(PhpProcess::canAcquire($dir, $resource));
    }

    public function testAnInheritedLockStartsAFreshOwnershipWhenTheChildAcquiresIt(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);
        $lock->acquire();

        $child = $this->fork(function (Channel $parent) use ($lock): void {
            $parent->send('forked');
            $parent->receive();
            $this->assertTrue($lock->acquire(false), 'the child acquires the inherited lock for itself');
            $this->assertTrue($lock->isAcquired());
            $parent->send('holding');
            $parent->receive();
            $lock->release();
            $this->assertFalse($lock->isAcquired());
            $parent->send('released');
        });
        $this->assertSame('forked', $child->receive());
        $lock->release();
        $child->send('go');

        $this->assertSame('holding', $child->receive());
        $this->assertFalse($lock->isAcquired(), 'the child\'s ownership is not the parent\'s');
        $this->assertFalse($lock->acquire(false), 'the child\'s lock excludes the parent');
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource));
        $child->send('release');
        $this->assertSame('released', $child->receive());
        $this->assertTrue(PhpProcess::canAcquire($dir, $resource), 'the child\'s release freed it');
        $child->wait();
    }

    public function testTheChildExitingWhileTheParentHoldsLeavesTheLockHeld(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $factory = new LockFactory(new FlockStore($dir));
        $lock = $factory->createLock($resource);
        $lock->acquire();

        // The child's shutdown destroys its copies of the factory, the store and the lock.
        $child = $this->fork(static function (Channel $parent) use ($factory, $lock): void {
            unset($factory, $lock);
            exit(0);
        });
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource));
    }
}
