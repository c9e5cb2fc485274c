<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * TTL bookkeeping on stores whose locks never expire (FlockStore, InMemoryStore, as in symfony/lock): acquire() and
 * refresh() leave the lifetime null; the Key shared with createLockFromKey() carries whatever lifetime is set on it.
 * Bounds only (0 < remaining <= ttl), never durations.
 */
final class LockLifetimeTest extends DeadboltTestCase
{
    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquireWithATtlLeavesTheLockWithoutLifetime(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertNull($lock->getRemainingLifetime(), 'no lifetime before acquire()');

        $this->assertTrue($lock->acquire());

        $this->assertNull($lock->getRemainingLifetime(), 'the lock never expires on this store');
        $this->assertFalse($lock->isExpired());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testALockWithoutTtlHasNoLifetime(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), null);

        $lock->acquire();

        $this->assertNull($lock->getRemainingLifetime());
        $this->assertFalse($lock->isExpired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testTheDefaultTtlIsFiveMinutes(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $logger = self::recordingLogger();
        $factory->setLogger($logger);
        $lock = $factory->createLock(uniqid(__METHOD__, true));

        $lock->acquire();

        $this->assertSame([300.0], $logger->ttls(), 'acquire() puts off the expiration by the default TTL, 300 s');
        $this->assertNull($lock->getRemainingLifetime(), 'the lock never expires on this store');
        $this->assertFalse($lock->isExpired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReadLocksWithATtlHaveNoLifetimeEither(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);

        $this->assertTrue($lock->acquireRead());

        $this->assertNull($lock->getRemainingLifetime());
        $this->assertFalse($lock->isExpired());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshLeavesTheLockWithoutLifetime(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);
        $lock->acquire();

        $lock->refresh(100.0);

        $this->assertNull($lock->getRemainingLifetime(), 'refresh(100) gives no lifetime on this store');
        $this->assertFalse($lock->isExpired());
        $lock->refresh(10.0);
        $this->assertNull($lock->getRemainingLifetime(), 'nor does refresh(10)');
        $this->assertFalse($lock->isExpired());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshWithoutArgumentUsesTheFactoryTtl(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $logger = self::recordingLogger();
        $factory->setLogger($logger);
        $lock = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $lock->acquire();
        $logger->records = [];

        $lock->refresh();

        $this->assertSame([30.0], $logger->ttls(), 'refresh() puts off the expiration by the factory TTL');
        $this->assertNull($lock->getRemainingLifetime());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshStartsFromAKeyWithoutExpiry(string $kind): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $lock = (new LockFactory($this->newStore($kind)))->createLockFromKey($key, 30.0);
        $lock->acquire();
        $key->reduceLifetime(5.0);

        $lock->refresh();

        $this->assertNull($key->getRemainingLifetime(), 'refresh() resets the Key\'s lifetime, as in Symfony');
        $this->assertFalse($lock->isExpired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshOfALockWithoutTtlLeavesItWithoutLifetime(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), null);
        $lock->acquire();

        $lock->refresh(20.0);

        $this->assertNull($lock->getRemainingLifetime());
        $this->assertFalse($lock->isExpired());
        $this->assertTrue($lock->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshWithNoTtlAnywhereIsAnInvalidArgument(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), null);
        $lock->acquire();

        try {
            $lock->refresh();
            $this->fail('refresh() without any TTL did not throw.');
        } catch (InvalidArgumentException $e) {
            $this->assertSame('You have to define an expiration duration.', $e->getMessage());
        }
        $this->assertTrue($lock->isAcquired(), 'the lock is still held');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshByALockThatDoesNotOwnTheResourceIsAConflict(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource, 30.0);
        $owner->acquire();
        $stranger = $factory->createLock($resource, 30.0);

        try {
            $stranger->refresh(60.0);
            $this->fail('A lock that is not the owner refreshed it.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($owner->isAcquired());
        $this->assertFalse($stranger->isAcquired());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshOfALockNobodyHoldsIsAConflict(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);

        $this->expectException(LockConflictedException::class);
        $lock->refresh();
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshAfterReleaseIsAConflict(string $kind): void
    {
        $lock = (new LockFactory($this->newStore($kind)))->createLock(uniqid(__METHOD__, true), 30.0);
        $lock->acquire();
        $lock->release();

        $this->expectException(LockConflictedException::class);
        $lock->refresh();
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquireResetsAnEarlierLifetime(string $kind): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $key->reduceLifetime(5.0);
        $lock = (new LockFactory($this->newStore($kind)))->createLockFromKey($key, null);

        $lock->acquire();

        $this->assertNull($key->getRemainingLifetime(), 'acquire() starts from a Key without expiry, as in Symfony');
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testCreateLockFromKeySharesTheKeyState(string $kind): void
    {
        $store = $this->newStore($kind);
        $key = new Key(uniqid(__METHOD__, true));
        $lock = (new LockFactory($store))->createLockFromKey($key, 60.0);

        $lock->acquire();

        $this->assertTrue($store->exists($key), 'the store sees the Key as the owner');
        $this->assertNull($key->getRemainingLifetime(), 'the lock never expires on this store, nor does its Key');

        $key->reduceLifetime(5.0);
        $fromLock = $lock->getRemainingLifetime();
        $this->assertIsFloat($fromLock, 'a change through the Key shows in the Lock');
        $this->assertGreaterThan(0.0, $fromLock);
        $this->assertLessThanOrEqual(5.0, $fromLock);
        $this->assertFalse($lock->isExpired());

        $lock->release();
        $this->assertFalse($store->exists($key));
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testALockWhoseKeyExpiredReportsIt(string $kind): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $lock = (new LockFactory($this->newStore($kind)))->createLockFromKey($key, 60.0);
        $lock->acquire();

        $key->reduceLifetime(1e-6);
        $deadline = hrtime(true) + 5_000_000_000;
        while (!$lock->isExpired() && hrtime(true) < $deadline) {
            usleep(100);
        }

        $this->assertTrue($lock->isExpired(), 'a lifetime of 1 µs is over after a while');
        $this->assertTrue($key->isExpired());
        $this->assertLessThanOrEqual(0.0, $lock->getRemainingLifetime());
    }

    /**
     * A PSR-3 shaped logger that keeps its records; ttls() lists the "ttl" of the expiration records.
     */
    private static function recordingLogger(): object
    {
        return new class() {
            /** @var list<array{0: mixed, 1: string, 2: array<string, mixed>}> */
            public array $records = [];

            public function log($level, $message, array $context = []): void
            {
                $this->records[] = [$level, (string) $message, $context];
            }

            /**
             * @return list<mixed>
             */
            public function ttls(): array
            {
                $ttls = [];
                foreach ($this->records as [$level, $message, $context]) {
                    if ('Expiration defined for "{resource}" lock for "{ttl}" seconds.' === $message) {
                        $ttls[] = $context['ttl'] ?? null;
                    }
                }

                return $ttls;
            }
        };
    }
}
