<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\DeadboltStore;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\SemaphoreStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\Exception\LockConflictedException;
use Symfony\Component\Lock\Exception\LockExpiredException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\FlockStore as SymfonyFlockStore;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * The bridge's store adapter, held to symfony/lock's documented store contract (PersistingStoreInterface,
 * BlockingStoreInterface, SharedLockStoreInterface, BlockingSharedLockStoreInterface) over every Deadbolt store, and
 * run by symfony/lock's own Lock and LockFactory; in mixed fleets with symfony/lock's own stores on the same files
 * and keys. Runs against the platform's symfony/lock and against 7.4 (scripts/test-php.sh).
 */
final class SymfonyBridgeStoreTest extends DeadboltTestCase
{
    /** @return iterable<string, array{string}> */
    public static function stores(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'InMemoryStore' => ['memory'];
        yield 'RedisStore by DSN' => ['redis'];
        yield 'RedisStore through \Redis' => ['phpredis'];
        yield 'SemaphoreStore' => ['semaphore'];
    }

    /** @return iterable<string, array{string}> the stores whose readers share a lock */
    public static function readWriteStores(): iterable
    {
        foreach (self::stores() as $name => $kind) {
            if (['semaphore'] !== $kind) {
                yield $name => $kind;
            }
        }
    }

    /** @return iterable<string, array{string}> the stores that other processes share */
    public static function sharedStores(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'RedisStore by DSN' => ['redis'];
        yield 'RedisStore through \Redis' => ['phpredis'];
        yield 'SemaphoreStore' => ['semaphore'];
    }

    private ?string $flockDir = null;

    private function deadboltStore(string $kind): object
    {
        return match ($kind) {
            'flock' => new FlockStore($this->flockDir ??= $this->tempDir()),
            'memory' => new InMemoryStore(),
            'redis' => new RedisStore(SharedRedis::dsn(), 60.0),
            'phpredis' => new RedisStore(SharedRedis::newPhpRedis(), 60.0),
            'semaphore' => new SemaphoreStore(),
        };
    }

    private static function resource(): string
    {
        return 'bridge-'.bin2hex(random_bytes(6));
    }

    /**
     * @dataProvider stores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testSaveExistsDeleteAndConflicts(string $kind): void
    {
        $store = new DeadboltStore($this->deadboltStore($kind));
        $resource = self::resource();
        $key = new Key($resource);
        $this->assertFalse($store->exists($key), 'never saved');
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $store->save($key); // saving again the key that holds it
        $this->assertTrue($store->exists($key));

        $other = new Key($resource);
        try {
            $store->save($other);
            $this->fail('a second key took the lock');
        } catch (LockConflictedException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\LockConflictedException::class, $e->getPrevious());
        }
        $this->assertFalse($store->exists($other));
        $store->delete($other); // not held: silent
        $this->assertTrue($store->exists($key));

        $store->delete($key);
        $this->assertFalse($store->exists($key));
        $store->save($other);
        $this->assertTrue($store->exists($other));
        $store->delete($other);
    }

    /**
     * @dataProvider readWriteStores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('readWriteStores')]
    public function testReadersShareAndExcludeAWriter(string $kind): void
    {
        $store = new DeadboltStore($this->deadboltStore($kind));
        $resource = self::resource();
        [$reader1, $reader2, $writer] = [new Key($resource), new Key($resource), new Key($resource)];
        $store->saveRead($reader1);
        $store->waitAndSaveRead($reader2); // no writer: at once
        $this->assertTrue($store->exists($reader1) && $store->exists($reader2));
        try {
            $store->save($writer);
            $this->fail('a writer took a lock held by readers');
        } catch (LockConflictedException) {
        }
        $store->delete($reader1);
        $store->delete($reader2);
        $store->save($writer);
        $this->assertTrue($store->exists($writer));
        $store->delete($writer);
    }

    /**
     * A blocking waiter in a forked child gets the lock once the parent releases it.
     *
     * @dataProvider sharedStores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('sharedStores')]
    public function testAForkedBlockingWaiterGetsTheLockWhenItIsReleased(string $kind): void
    {
        $deadbolt = $this->deadboltStore($kind);
        $store = new DeadboltStore($deadbolt);
        $resource = self::resource();
        $key = new Key($resource);
        $store->save($key);
        $child = $this->fork(static function (Channel $parent) use ($kind, $deadbolt, $resource): void {
            // A store of the child's own (a connection is per process anyway; flock shares the directory).
            $store = new DeadboltStore('phpredis' === $kind ? new RedisStore(SharedRedis::newPhpRedis(), 60.0) : $deadbolt);
            $waiter = new Key($resource);
            $parent->send('waiting');
            $store->waitAndSave($waiter);
            $parent->send($store->exists($waiter) ? 'held' : 'not held');
            $store->delete($waiter);
        });
        $this->assertSame('waiting', $child->receive(30.0));
        usleep(200_000);
        $store->delete($key);
        $this->assertSame('held', $child->receive(30.0));
        $child->wait(30.0);
    }

    /**
     * As symfony/lock's expiring stores: save() only shortens the Key's lifetime, and a Key that has run out is not
     * saved (LockExpiredException, nothing left).
     *
     * @dataProvider stores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testLifetimeAndExpiry(string $kind): void
    {
        $store = new DeadboltStore($this->deadboltStore($kind));
        $resource = self::resource();
        $expiring = \in_array($kind, ['redis', 'phpredis'], true);

        $key = new Key($resource);
        $store->save($key);
        $this->assertSame($expiring ? 60.0 : null, null === $key->getRemainingLifetime() ? null : round($key->getRemainingLifetime()), 'the store\'s initial TTL');
        $store->putOffExpiration($key, 5.0);
        if ($expiring) {
            $this->assertLessThanOrEqual(5.0, $key->getRemainingLifetime());
        }
        $store->delete($key);

        $short = new Key($resource);
        $short->reduceLifetime(2.0);
        $store->save($short);
        $this->assertLessThanOrEqual(2.0, $short->getRemainingLifetime(), 'a shorter lifetime stays');
        $store->delete($short);

        $expired = new Key($resource);
        $expired->reduceLifetime(0.0);
        try {
            $store->save($expired);
            $this->fail('an expired Key was saved');
        } catch (LockExpiredException) {
        }
        $this->assertFalse($store->exists($expired));
        $free = new Key($resource);
        $store->save($free);
        $this->assertTrue($store->exists($free), 'nothing was left behind');
        $store->delete($free);
    }

    /**
     * symfony/lock's own Lock and LockFactory run on the adapter.
     *
     * @dataProvider stores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testSymfonysOwnLockRunsOnIt(string $kind): void
    {
        $factory = new SymfonyLockFactory(new DeadboltStore($this->deadboltStore($kind)));
        $resource = self::resource();
        $lock = $factory->createLock($resource, 30.0);
        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse($factory->createLock($resource)->acquire(), 'one holder');
        $lock->refresh(20.0);
        if (\in_array($kind, ['redis', 'phpredis'], true)) {
            $this->assertLessThanOrEqual(20.0, $lock->getRemainingLifetime());
        }
        $reader = $factory->createLock($resource.':shared');
        $this->assertTrue($reader->acquireRead());
        $this->assertSame('semaphore' !== $kind, $factory->createLock($resource.':shared')->acquireRead(), 'readers share (SemaphoreStore: read locks are exclusive)');
        $lock->release();
        $this->assertFalse($lock->isAcquired());
        $again = $factory->createLock($resource);
        $this->assertTrue($again->acquire(true));
        $again->release();
    }

    /** A Key saved through the adapter is symfony/lock's RedisStore's to release, and the other way round. */
    public function testAMixedRedisFleetSharesKeysAndTokens(): void
    {
        $symfony = new SymfonyRedisStore(SharedRedis::newPhpRedis());
        $adapter = new DeadboltStore(new RedisStore(SharedRedis::dsn()));
        $resource = self::resource();

        $key = new Key($resource);
        $adapter->save($key);
        $this->assertTrue($symfony->exists($key), 'symfony/lock sees the token in the Key');
        try {
            $symfony->save(new Key($resource));
            $this->fail('symfony/lock took a lock held through the adapter');
        } catch (LockConflictedException) {
        }
        $symfony->delete($key);
        $this->assertFalse($adapter->exists($key), 'released by symfony/lock');

        $theirs = new Key($resource);
        $symfony->save($theirs);
        $this->assertTrue($adapter->exists($theirs), 'the adapter owns what symfony/lock saved with that Key');
        $adapter->putOffExpiration($theirs, 10.0);
        $adapter->delete($theirs);
        $this->assertFalse($symfony->exists($theirs));

        // A Key that travels (Messenger serializes it) keeps its token and its owner.
        $travelling = new Key($resource);
        $adapter->save($travelling);
        $arrived = unserialize(serialize($travelling));
        $this->assertTrue($adapter->exists($arrived));
        $this->assertTrue($symfony->exists($arrived));
        $adapter->delete($arrived);
        $this->assertFalse($adapter->exists($travelling));
    }

    /** symfony/lock's FlockStore and the adapter over Deadbolt's, in one directory, are one lock. */
    public function testAMixedFlockFleetExcludesItself(): void
    {
        $dir = $this->tempDir();
        $symfony = new SymfonyFlockStore($dir);
        $adapter = new DeadboltStore(new FlockStore($dir));
        $resource = self::resource();
        $key = new Key($resource);
        $adapter->save($key);
        try {
            $symfony->save(new Key($resource));
            $this->fail('symfony/lock took a flock lock held through the adapter');
        } catch (LockConflictedException) {
        }
        $this->assertTrue($adapter->exists($key));
        try {
            serialize($key);
            $this->fail('a Key holding a flock lock was serialized');
        } catch (\Symfony\Component\Lock\Exception\UnserializableKeyException) {
            $this->addToAssertionCount(1); // marked unserializable, as symfony/lock's FlockStore marks it
        }
        $adapter->delete($key);
        $theirs = new Key($resource);
        $symfony->save($theirs);
        try {
            $adapter->save(new Key($resource));
            $this->fail('the adapter took a flock lock symfony/lock holds');
        } catch (LockConflictedException) {
        }
        $symfony->delete($theirs);
    }
}
