<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Exception\UnserializableKeyException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\SemaphoreStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\Channel;

/**
 * System V semaphores: the store contract for exclusive locks, waits in the kernel across processes, what the kernel
 * promises about a holder's death and fork(), and an operator's view. Interop with symfony/lock's SemaphoreStore is in
 * tests/Interop/SymfonySemaphoreStoreInteropTest.php.
 *
 * @requires extension pcntl
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
final class SemaphoreStoreTest extends StoreContractTestCase
{
    use BlockingStoreTestTrait;
    use NeverExpiringStoreTestTrait;

    protected function getStore(): object
    {
        return new SemaphoreStore();
    }

    public function testReadLocksAreExclusive(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $reader = new Key($resource);
        $store->saveRead($reader);

        $this->expectException(LockConflictedException::class);
        $store->saveRead(new Key($resource));
    }

    public function testALockHereDrawsNoFencingToken(): void
    {
        $lock = (new LockFactory($this->getStore()))->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($lock->acquire());

        $this->assertNull($lock->getFencingToken(), 'a semaphore set keeps no counter to draw from');
    }

    public function testAKilledHolderFreesItsLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $child = $this->fork(function (Channel $parent) use ($store, $resource): void {
            $store->save($held = new Key($resource));
            $parent->send('holding');
            $parent->receive(600.0);
        });
        $this->assertSame('holding', $child->receive());
        $key = new Key($resource);
        try {
            $store->save($key);
            $this->fail('The child holds the lock.');
        } catch (LockConflictedException) {
        }

        $child->kill(); // SIGKILL, reaped: the kernel has undone the child's hold

        $store->save($key);
        $this->assertTrue($store->exists($key));
    }

    public function testAForkedChildOfTheHolderLeavesTheLockWithItsParent(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $store->save($key = new Key($resource.'-key'));

        $child = $this->fork(function (Channel $parent) use ($lock, $key, $store): void {
            // The child's copies: its own Lock is not acquired here, and dropping them frees nothing.
            $parent->send($lock->isAcquired() || $store->exists($key) ? 'inherited a hold' : 'holds nothing');
        });
        $this->assertSame('holds nothing', $child->receive());
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertTrue($store->exists($key));
        $this->assertFalse((new LockFactory(new SemaphoreStore()))->createLock($resource)->acquire());
        $this->assertFalse((new LockFactory(new SemaphoreStore()))->createLock($resource.'-key')->acquire());
    }

    public function testADeadlineEndsAWaitWithoutTheLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $store->save($holder = new Key($resource));
        $lock = (new LockFactory($store))->createLock($resource);

        $this->assertFalse($lock->acquire(true, timeout: 0.2));

        $store->delete($holder);
        $this->assertTrue($lock->acquire(true, timeout: 30.0));
    }

    public function testTheTwoKeyHashesAreTwoLocks(): void
    {
        $resource = uniqid(__METHOD__, true);
        (new SemaphoreStore())->save($current = new Key($resource));
        (new SemaphoreStore('md5'))->save($old = new Key($resource));

        $this->assertTrue((new SemaphoreStore())->exists($current));
        $this->assertTrue((new SemaphoreStore('md5'))->exists($old));
        $this->expectException(LockConflictedException::class);
        (new SemaphoreStore('md5'))->save(new Key($resource));
    }

    public function testAnUnknownKeyHashIsRefusedWithTheChoices(): void
    {
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('Unknown SemaphoreStore key hash "sha1": use "xxh128" (symfony/lock 6.0 and later, the default) or "md5" (symfony/lock 5.4).');
        new SemaphoreStore('sha1');
    }

    public function testAKeyHoldingALockCannotBeSerialized(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $this->expectException(UnserializableKeyException::class);
        serialize($key);
    }

    public function testTheStoreFactoryTakesSymfonysDsnAndTheKeyHash(): void
    {
        $resource = uniqid(__METHOD__, true);
        // Held while these Keys live: a Key dropped while holding frees its lock (as a sem_get() resource does).
        StoreFactory::createStore('semaphore')->save($current = new Key($resource));
        StoreFactory::createStore('semaphore?hash=md5')->save($old = new Key($resource));

        try {
            (new SemaphoreStore())->save(new Key($resource));
            $this->fail('"semaphore" is the xxh128 store');
        } catch (LockConflictedException) {
        }
        try {
            (new SemaphoreStore('md5'))->save(new Key($resource));
            $this->fail('"semaphore?hash=md5" is the md5 store');
        } catch (LockConflictedException) {
        }
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('A semaphore DSN is "semaphore", or "semaphore?hash=md5" for the IPC keys of symfony/lock 5.4.');
        StoreFactory::createStore('semaphore://localhost');
    }

    public function testAnOperatorSeesTheHolderAndItsForcedReleaseIsALostLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $this->assertSame([], $store->inspect($resource)->getHolders());
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $holders = $store->inspect($resource)->getHolders();
        $this->assertCount(1, $holders);
        $this->assertSame(getmypid(), $holders[0]->getPid());
        $this->assertSame(1, $store->forceRelease($resource));

        $next = (new LockFactory(new SemaphoreStore()))->createLock($resource);
        $this->assertTrue($next->acquire(), 'the set is gone: the next taker makes a new one');
        try {
            $lock->refresh(10.0);
            $this->fail('refresh() of a lock released by force');
        } catch (LockExpiredException $e) {
            $this->assertStringContainsString('was lost', $e->getMessage());
        }
        $this->assertTrue($lock->isLost());
        $this->assertFalse($lock->isAcquired());
        try {
            $lock->release();
            $this->fail('release() of a lock released by force');
        } catch (LockExpiredException) {
        }
        $this->assertTrue($next->isAcquired(), "the old holder's release leaves the new holder's set alone");
    }

    public function testAKeyDroppedWhileHoldingFreesItsLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $store->save(new Key($resource));

        $store->save($key = new Key($resource));
        $this->assertTrue($store->exists($key));
    }
}
