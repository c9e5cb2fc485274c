<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Tests\Support\Channel;

/**
 * For a store whose locks expire in whole seconds and are exclusive only (memcached's items, the lock table's rows),
 * each process connecting on its own: read locks exclude each other, an expired lock is free and never revived by its
 * holder's refresh, a killed holder's lock ends with its TTL, a forked child holds nothing of its parent's and takes
 * locks of its own. The store comes from getStore(), also in forked children.
 */
trait ExpiringExclusiveStoreTestTrait
{
    public function testReadLocksAreExclusive(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $store->saveRead(new Key($resource));

        $this->expectException(LockConflictedException::class);
        $store->saveRead(new Key($resource));
    }

    public function testAnExpiredLockIsFreeAndARefreshNeverRevivesIt(): void
    {
        $factory = new LockFactory($this->getStore());
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 1.0);
        $this->assertTrue($lock->acquire());

        $rival = $factory->createLock($resource, 30.0);
        // The store counts whole seconds; the rival polls until the lock has expired.
        $this->assertTrue($rival->acquire(true, timeout: 30.0));
        $this->assertFalse($lock->isAcquired());
        try {
            $lock->refresh(30.0);
            $this->fail('A refresh revived a lost lock.');
        } catch (LockConflictedException) {
        }
        $this->assertTrue($rival->isAcquired(), 'the refresh left the new holder alone');
        $rival->release();

        // Expired and taken by no one: still not revived (someone may have held it meanwhile).
        $lock = $factory->createLock($resource, 1.0);
        $this->assertTrue($lock->acquire());
        $this->assertTrue($factory->createLock($resource)->acquire(true, timeout: 30.0));
        $factory->createLock($resource)->release();
        $this->expectException(LockConflictedException::class);
        $lock->refresh(30.0);
    }

    public function testAKilledHoldersLockEndsWithItsTtl(): void
    {
        $resource = uniqid(__METHOD__, true);
        $child = $this->fork(function (Channel $parent) use ($resource): void {
            $lock = (new LockFactory($this->getStore()))->createLock($resource, 2.0);
            $parent->send($lock->acquire() ? 'holding' : 'refused');
            $parent->receive(600.0);
        });
        $this->assertSame('holding', $child->receive());
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertFalse($lock->acquire());

        $child->kill();

        $this->assertTrue($lock->acquire(true, timeout: 30.0), 'the dead holder\'s lock expired');
    }

    public function testAForkedChildOfTheHolderHoldsNothingAndConnectsOnItsOwn(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $child = $this->fork(function (Channel $parent) use ($lock, $store, $resource): void {
            $held = $lock->isAcquired() ? 'inherited a hold' : 'holds nothing';
            // The store the child inherited works on a connection of the child's own.
            $own = (new LockFactory($store))->createLock($resource.'-child');
            $parent->send($held.', '.($own->acquire() ? 'took its own' : 'could not take its own'));
            $own->release();
        });
        $this->assertSame('holds nothing, took its own', $child->receive());
        $child->wait();

        // The child's end left the parent's connection and lock alone.
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse((new LockFactory($this->getStore()))->createLock($resource)->acquire());
        $lock->release();
    }

    public function testAnOperatorSeesTheHolderAndCanReleaseIt(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($store))->createLock($resource, 60.0);
        $this->assertTrue($lock->acquire());

        $state = $store->inspect($resource);
        $this->assertTrue($state->isHeld());
        $this->assertCount(1, $state->getHolders());
        $this->assertGreaterThan(time(), $state->getHolders()[0]->getExpiresAt(), 'when the store lets it expire');
        $this->assertSame(1, $store->forceRelease($resource));
        $this->assertFalse($lock->isAcquired());
        $this->assertFalse($store->inspect($resource)->isHeld());
        $this->assertSame(0, $store->forceRelease($resource), 'nothing held, nothing released');
    }
}
