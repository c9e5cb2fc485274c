<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Key;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * Lock: acquire, read locks, release, ownership, auto-release, the public constructor and setLogger(), and what a Lock
 * refuses to be (serialized, cloned).
 */
final class LockTest extends DeadboltTestCase
{
    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquireTakesTheLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $lock = $factory->createLock(uniqid(__METHOD__, true));
        $this->assertFalse($lock->isAcquired(), 'not acquired before acquire()');

        $this->assertTrue($lock->acquire());

        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testANonBlockingAcquireOfAHeldLockReturnsFalse(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource);
        $other = $factory->createLock($resource);
        $owner->acquire();

        $this->assertFalse($other->acquire(false));

        $this->assertFalse($other->isAcquired());
        $this->assertTrue($owner->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquiringTwiceKeepsTheLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource);

        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->acquire(), 'the owner acquires its own lock again');

        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertTrue($factory->createLock($resource)->acquire(), 'one release frees a lock acquired twice');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReleaseFreesTheLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource);
        $lock->acquire();

        $lock->release();

        $this->assertFalse($lock->isAcquired());
        $next = $factory->createLock($resource);
        $this->assertTrue($next->acquire());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReleaseOfALockThatIsNotHeldDoesNothing(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource);

        $lock->release();
        $lock->release();

        $this->assertFalse($lock->isAcquired());
        $this->assertTrue($lock->acquire(), 'a lock released before use can still be acquired');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReleaseByAnotherLockLeavesTheOwnerHoldingIt(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource);
        $stranger = $factory->createLock($resource);
        $owner->acquire();

        $stranger->release();

        $this->assertTrue($owner->isAcquired());
        $this->assertFalse($factory->createLock($resource)->acquire());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAReleasedLockCanBeAcquiredAgain(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $lock = $factory->createLock(uniqid(__METHOD__, true));

        for ($round = 0; $round < 3; ++$round) {
            $this->assertTrue($lock->acquire(), "round $round");
            $lock->release();
            $this->assertFalse($lock->isAcquired(), "round $round");
        }
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReadersShareTheLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $first = $factory->createLock($resource);
        $second = $factory->createLock($resource);

        $this->assertTrue($first->acquireRead());
        $this->assertTrue($second->acquireRead());

        $this->assertTrue($first->isAcquired());
        $this->assertTrue($second->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAReaderKeepsWritersOutAndTheReverse(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $reader = $factory->createLock($resource);
        $writer = $factory->createLock($resource);

        $reader->acquireRead();
        $this->assertFalse($writer->acquire(), 'a writer got in beside a reader');
        $reader->release();

        $this->assertTrue($writer->acquire());
        $this->assertFalse($reader->acquireRead(), 'a reader got in beside a writer');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testTheSoleReaderIsPromotedByAcquire(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource);
        $lock->acquireRead();

        $this->assertTrue($lock->acquire());

        $this->assertFalse($factory->createLock($resource)->acquireRead(), 'the promoted lock keeps readers out');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAWriterIsDemotedByAcquireRead(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource);
        $lock->acquire();

        $this->assertTrue($lock->acquireRead());

        $reader = $factory->createLock($resource);
        $this->assertTrue($reader->acquireRead(), 'the demoted lock lets readers in');
        $this->assertFalse($factory->createLock($resource)->acquire(), 'and still keeps writers out');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testUnsetReleasesAnAutoReleasedLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 300.0, true);
        $lock->acquire();
        $this->assertFalse($factory->createLock($resource)->acquire());

        unset($lock);

        $this->assertTrue($factory->createLock($resource)->acquire());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testLeavingTheScopeReleasesAnAutoReleasedLock(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);

        $heldInScope = (static function () use ($factory, $resource): bool {
            $lock = $factory->createLock($resource);
            $lock->acquire();

            return !$factory->createLock($resource)->acquire();
        })();

        $this->assertTrue($heldInScope, 'held while in scope');
        $this->assertTrue($factory->createLock($resource)->acquire(), 'free once the scope is left');
    }

    public function testUnsetKeepsALockWithoutAutoReleaseInMemory(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 300.0, false);
        $lock->acquire();

        unset($lock);

        $this->assertFalse($factory->createLock($resource)->acquire());
    }

    public function testUnsetKeepsAFlockLockWithoutAutoReleaseWhileItsKeyLives(): void
    {
        $store = new FlockStore($this->tempDir());
        $factory = new LockFactory($store);
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $lock = $factory->createLockFromKey($key, 300.0, false);
        $lock->acquire();

        unset($lock);

        $this->assertTrue($store->exists($key), 'the Key still owns the lock');
        $this->assertFalse($factory->createLock($resource)->acquire());
        $store->delete($key);
        $this->assertTrue($factory->createLock($resource)->acquire());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testUnsetOfALockThatLostTheRaceLeavesTheOwnerAlone(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource);
        $owner->acquire();
        $loser = $factory->createLock($resource);
        $loser->acquire();

        unset($loser);

        $this->assertTrue($owner->isAcquired());
        $this->assertFalse($factory->createLock($resource)->acquire());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAReleasedLockLeavesTheNextOwnerAloneWhenItDies(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $first = $factory->createLock($resource);
        $first->acquire();
        $first->release();
        $second = $factory->createLock($resource);
        $second->acquire();

        unset($first);

        $this->assertTrue($second->isAcquired());
    }

    public function testSerializingALockThrowsBadMethodCallException(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true));

        $this->expectException(\BadMethodCallException::class);
        serialize($lock);
    }

    public function testSerializingAnAcquiredFlockLockThrowsBadMethodCallException(): void
    {
        $lock = (new LockFactory(new FlockStore($this->tempDir())))->createLock(uniqid(__METHOD__, true));
        $lock->acquire();

        $this->expectException(\BadMethodCallException::class);
        serialize($lock);
    }

    public function testAForgedSerializedLockDoesNotBecomeALock(): void
    {
        $payload = sprintf('O:%d:"%s":0:{}', \strlen(Lock::class), Lock::class);

        try {
            $result = @unserialize($payload);
        } catch (\Throwable $e) {
            $this->addToAssertionCount(1);

            return;
        }
        $this->assertNotInstanceOf(Lock::class, $result);
    }

    public function testCloningALockThrowsError(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true));

        $this->expectException(\Error::class);
        $copy = clone $lock;
    }

    public function testCallingSerializeDirectlyThrowsBadMethodCallException(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true));

        $this->expectException(\BadMethodCallException::class);
        $lock->__serialize();
    }

    public function testCallingUnserializeDirectlyThrowsBadMethodCallException(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->__unserialize([]);
            $this->fail('__unserialize() returned.');
        } catch (\BadMethodCallException $e) {
            $this->addToAssertionCount(1);
        }
        $this->assertTrue($lock->acquire(), 'the Lock still works');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testALockBuiltWithNewAcquiresAndReleases(string $kind): void
    {
        $store = $this->newStore($kind);
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $lock = new Lock($key, $store, 30.0, true);
        $this->assertFalse($lock->isAcquired());

        $this->assertTrue($lock->acquire());

        $this->assertTrue($lock->isAcquired());
        $this->assertTrue($store->exists($key), 'the Lock acquires through the given Key and store');
        $this->assertFalse((new Lock(new Key($resource), $store))->acquire(), 'a second Lock on the store conflicts');
        $this->assertFalse((new LockFactory($store))->createLock($resource)->acquire(), 'and so does a factory\'s lock');
        $lock->release();
        $this->assertFalse($lock->isAcquired());
        $this->assertFalse($store->exists($key));
        $this->assertTrue((new Lock(new Key($resource), $store))->acquire(), 'released for everyone');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testALockBuiltWithNewReadsAndRefreshes(string $kind): void
    {
        $store = $this->newStore($kind);
        $resource = uniqid(__METHOD__, true);
        $lock = new Lock(new Key($resource), $store, 30.0);

        $this->assertTrue($lock->acquireRead());
        $this->assertTrue((new Lock(new Key($resource), $store))->acquireRead(), 'readers share it');
        $lock->refresh();

        $this->assertTrue($lock->isAcquired());
        $this->assertNull($lock->getRemainingLifetime(), 'the lock never expires on this store');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testTheConstructorDefaultsToNoTtl(string $kind): void
    {
        $lock = new Lock(new Key(uniqid(__METHOD__, true)), $this->newStore($kind));
        $lock->acquire();

        try {
            $lock->refresh();
            $this->fail('refresh() without any TTL did not throw.');
        } catch (InvalidArgumentException $e) {
            $this->assertSame('You have to define an expiration duration.', $e->getMessage());
        }
        $this->assertNull($lock->getRemainingLifetime());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testTheConstructorDefaultsToAutoRelease(string $kind): void
    {
        $store = $this->newStore($kind);
        $resource = uniqid(__METHOD__, true);
        $lock = new Lock(new Key($resource), $store);
        $lock->acquire();
        $this->assertFalse((new Lock(new Key($resource), $store))->acquire());

        unset($lock);

        $this->assertTrue((new Lock(new Key($resource), $store))->acquire());
    }

    public function testAConstructedLockWithoutAutoReleaseStaysHeldWhenUnset(): void
    {
        $store = new InMemoryStore();
        $resource = uniqid(__METHOD__, true);
        $lock = new Lock(new Key($resource), $store, null, false);
        $lock->acquire();

        unset($lock);

        $this->assertFalse((new Lock(new Key($resource), $store))->acquire());
    }

    public function testAConstructedLockSharesItsKey(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $lock = new Lock($key, new FlockStore($this->tempDir()), 60.0);
        $lock->acquire();

        $key->reduceLifetime(5.0);

        $remaining = $lock->getRemainingLifetime();
        $this->assertIsFloat($remaining, 'a change through the Key shows in the Lock');
        $this->assertGreaterThan(0.0, $remaining);
        $this->assertLessThanOrEqual(5.0, $remaining);
    }

    /**
     * @return iterable<string, array{object}>
     */
    public static function notDeadboltStores(): iterable
    {
        yield 'stdClass' => [new \stdClass()];
        yield 'a closure' => [static fn () => null];
        yield 'symfony/lock InMemoryStore' => [new \Symfony\Component\Lock\Store\InMemoryStore()];
        yield 'a Deadbolt Key' => [new Key('not a store')];
        yield 'a Deadbolt LockFactory' => [new LockFactory(new InMemoryStore())];
    }

    /**
     * @dataProvider notDeadboltStores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('notDeadboltStores')]
    public function testTheConstructorRejectsAnObjectThatIsNotADeadboltStore(object $notAStore): void
    {
        $this->expectException(\TypeError::class);
        new Lock(new Key(uniqid(__METHOD__, true)), $notAStore);
    }

    public function testTheConstructorRejectsAStringAsStore(): void
    {
        $this->expectException(\TypeError::class);
        new Lock(new Key(uniqid(__METHOD__, true)), 'flock');
    }

    public function testTheConstructorRejectsASymfonyKey(): void
    {
        $this->expectException(\TypeError::class);
        new Lock(new \Symfony\Component\Lock\Key(uniqid(__METHOD__, true)), new InMemoryStore());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testALoggerSetOnAConstructedLockReceivesItsMessages(string $kind): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = new Lock(new Key($resource), $this->newStore($kind), 30.0);
        $logger = self::recordingLogger();

        $lock->setLogger($logger);
        $lock->acquire();
        $lock->refresh(10.0);
        $lock->release();

        $this->assertSame([
            ['debug', 'Successfully acquired the "{resource}" lock.', ['resource' => $resource]],
            ['debug', 'Expiration defined for "{resource}" lock for "{ttl}" seconds.', ['resource' => $resource, 'ttl' => 30.0]],
            ['debug', 'Expiration defined for "{resource}" lock for "{ttl}" seconds.', ['resource' => $resource, 'ttl' => 10.0]],
            ['debug', 'Successfully released the "{resource}" lock.', ['resource' => $resource]],
        ], self::withoutTimes($logger->records));
        $this->assertIsFloat($logger->records[0][2]['wait']);
        $this->assertIsFloat($logger->records[3][2]['hold']);
    }

    public function testALoggerSetOnALockReceivesItsConflicts(): void
    {
        $store = new InMemoryStore();
        $resource = uniqid(__METHOD__, true);
        (new Lock(new Key($resource), $store, null, false))->acquire();
        $lock = new Lock(new Key($resource), $store);
        $logger = self::recordingLogger();
        $lock->setLogger($logger);

        $this->assertFalse($lock->acquire());

        $this->assertSame(
            [['info', 'Failed to acquire the "{resource}" lock. Someone else already acquired the lock.', ['resource' => $resource]]],
            $logger->records
        );
    }

    public function testALoggerSetOnALockFromAFactoryReceivesItsMessages(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new InMemoryStore()))->createLock($resource, null);
        $logger = self::recordingLogger();

        $lock->setLogger($logger);
        $lock->acquire();

        $this->assertSame([['debug', 'Successfully acquired the "{resource}" lock.', ['resource' => $resource]]], self::withoutTimes($logger->records));
    }

    /**
     * The records as symfony/lock writes them: without the wait and hold times Deadbolt adds to the context.
     *
     * @param list<array{0: mixed, 1: string, 2: array<string, mixed>}> $records
     *
     * @return list<array{0: mixed, 1: string, 2: array<string, mixed>}>
     */
    private static function withoutTimes(array $records): array
    {
        return array_map(static fn (array $r): array => [$r[0], $r[1], array_diff_key($r[2], ['wait' => true, 'hold' => true])], $records);
    }

    public function testALoggerSetOnALockReplacesTheFactoryLogger(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $factoryLogger = self::recordingLogger();
        $factory->setLogger($factoryLogger);
        $lock = $factory->createLock(uniqid(__METHOD__, true), null);
        $lockLogger = self::recordingLogger();

        $lock->setLogger($lockLogger);
        $lock->acquire();

        $this->assertSame([], $factoryLogger->records);
        $this->assertCount(1, $lockLogger->records);
    }

    public function testALockWithoutLoggerLogsNothingToTheLoggerOfAnotherLock(): void
    {
        $store = new InMemoryStore();
        $logged = new Lock(new Key(uniqid(__METHOD__, true)), $store);
        $logger = self::recordingLogger();
        $logged->setLogger($logger);

        (new Lock(new Key(uniqid(__METHOD__, true)), $store))->acquire();

        $this->assertSame([], $logger->records);
    }

    public function testEachCreateLockReturnsANewLock(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);

        $first = $factory->createLock($resource);
        $second = $factory->createLock($resource);

        $this->assertInstanceOf(Lock::class, $first);
        $this->assertNotSame($first, $second);
        $this->assertTrue($first->acquire());
        $this->assertFalse($second->acquire());
    }

    public function testLocksOfDifferentResourcesAreIndependent(): void
    {
        $factory = new LockFactory(new FlockStore($this->tempDir()));
        $first = $factory->createLock(uniqid(__METHOD__, true));
        $second = $factory->createLock(uniqid(__METHOD__, true));

        $this->assertTrue($first->acquire());
        $this->assertTrue($second->acquire());
    }

    private static function recordingLogger(): object
    {
        return new class() {
            /** @var list<array{0: mixed, 1: string, 2: array<string, mixed>}> */
            public array $records = [];

            public function log($level, $message, array $context = []): void
            {
                $this->records[] = [$level, (string) $message, $context];
            }
        };
    }
}
