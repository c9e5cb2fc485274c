<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisMonitor;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * RedisStore on the suite's redis-server (DEADBOLT_REDIS_PORT), one subclass per way of connecting: the store
 * contract, shared locks, expiry, and the data model symfony/lock >= 5.2 shares (SYMFONY-COMPAT.md section 4),
 * checked in Redis itself with a separate phpredis connection.
 */
abstract class RedisStoreTestCase extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    /**
     * A new RedisStore on the shared server, database 0, connected the way this variant tests.
     */
    abstract protected function redisStore(float $initialTtl = 300.0): RedisStore;

    /**
     * PHP code for a child process that leaves in $store a RedisStore connected the same way; it gets the server's
     * port as $vars['port'] (and may use $vars['socket']).
     */
    abstract protected static function storeCode(): string;

    protected function getStore(): object
    {
        return $this->redisStore();
    }

    protected function redis(): \Redis
    {
        return SharedRedis::client();
    }

    public function testSaveGivesTheKeyTheInitialTtl(): void
    {
        $store = $this->redisStore(60.0);
        $key = new Key(uniqid(__METHOD__, true));

        $store->save($key);

        $remaining = $key->getRemainingLifetime();
        $this->assertIsFloat($remaining);
        $this->assertGreaterThan(0.0, $remaining);
        $this->assertLessThanOrEqual(60.0, $remaining);
        $pttl = $this->redis()->pttl((string) $key);
        $this->assertGreaterThan(0, $pttl);
        $this->assertLessThanOrEqual(60_000, $pttl);
    }

    public function testSaveReadGivesTheKeyTheInitialTtl(): void
    {
        $store = $this->redisStore(45.0);
        $key = new Key(uniqid(__METHOD__, true));

        $store->saveRead($key);

        $this->assertGreaterThan(0.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(45.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(45_000, $this->redis()->pttl((string) $key));
    }

    public function testPutOffExpirationExtendsTheLockInRedisAndReducesTheKeyLifetime(): void
    {
        $store = $this->redisStore(300.0);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $store->putOffExpiration($key, 10.0);

        $this->assertGreaterThan(0.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(10.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(10_000, $this->redis()->pttl((string) $key), 'Redis follows the new TTL');
        $this->assertTrue($store->exists($key));

        $store->putOffExpiration($key, 1000.0);

        $this->assertLessThanOrEqual(10.0, $key->getRemainingLifetime(), 'the Key keeps the earlier expiry, as in symfony/lock');
        $this->assertGreaterThan(10_000, $this->redis()->pttl((string) $key), 'the lock in Redis lives 1000 s');
    }

    public function testALockWithATtlIsNoLongerAcquiredOnceItsTtlPassed(): void
    {
        $factory = new LockFactory($this->redisStore());
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 0.3);
        $this->assertTrue($lock->acquire());

        sleep(1); // lets the 0.3 s pass; nothing below depends on how long it really took

        $this->assertFalse($lock->isAcquired());
        $this->assertTrue($lock->isExpired());
        $other = $factory->createLock($resource, 30.0);
        $this->assertTrue($other->acquire(), 'another lock takes the expired one');
        $this->assertFalse($lock->acquire(false), 'the first lock is now refused');
        $lock->release();
        $this->assertTrue($other->isAcquired(), 'the release of the expired lock leaves the new owner alone');
        try {
            $lock->refresh();
            $this->fail('The expired lock was refreshed over the new owner.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }
        $this->assertTrue($other->isAcquired());
    }

    public function testAReadLockWithATtlExpiresToo(): void
    {
        $factory = new LockFactory($this->redisStore());
        $resource = uniqid(__METHOD__, true);
        $reader = $factory->createLock($resource, 0.3);
        $this->assertTrue($reader->acquireRead());

        sleep(1);

        $this->assertFalse($reader->isAcquired());
        $this->assertTrue($factory->createLock($resource, 30.0)->acquire(), 'a writer gets in');
    }

    /**
     * @dataProvider acquireModes
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('acquireModes')]
    public function testRemainingLifetimeAfterAcquireWithATtlIsWithinTheTtl(string $mode): void
    {
        $lock = (new LockFactory($this->redisStore()))->createLock(uniqid(__METHOD__, true), 20.0);

        $this->assertTrue($lock->$mode());

        $remaining = $lock->getRemainingLifetime();
        $this->assertIsFloat($remaining);
        $this->assertGreaterThan(0.0, $remaining);
        $this->assertLessThanOrEqual(20.0, $remaining);
        $this->assertFalse($lock->isExpired());
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function acquireModes(): iterable
    {
        yield 'acquire' => ['acquire'];
        yield 'acquireRead' => ['acquireRead'];
    }

    public function testRefreshPutsOffTheExpirationInRedis(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $lock = (new LockFactory($this->redisStore()))->createLockFromKey($key, 5.0);
        $lock->acquire();
        $token = $key->__serialize()['token'];

        $lock->refresh(60.0);

        $this->assertGreaterThan(5.0, $lock->getRemainingLifetime());
        $this->assertLessThanOrEqual(60.0, $lock->getRemainingLifetime());
        $pttl = $this->redis()->pttl($resource);
        $this->assertGreaterThan(5_000, $pttl);
        $this->assertLessThanOrEqual(60_000, $pttl);
        $members = $this->redis()->zRange($resource, 0, -1, true);
        $this->assertSame(self::sortedNames([$token => 0, '__write__' => 0]), self::sortedNames($members));
        $this->assertSame($members[$token], $members['__write__'], 'the writer marker follows the token');
    }

    /**
     * SYMFONY-COMPAT.md section 4: the key is the resource, a sorted set of the token and __write__ scored with the
     * expiry in server milliseconds; the key expires with its last member.
     */
    public function testAnExclusiveLockIsTheTokenAndWriteInASortedSetNamedAfterTheResource(): void
    {
        $resource = uniqid(__METHOD__, true)."\0:é";
        $key = new Key($resource);
        $lock = (new LockFactory($this->redisStore()))->createLockFromKey($key, 30.0);

        $lock->acquire();

        $token = $key->__serialize()['token'];
        $redis = $this->redis();
        $this->assertSame(\Redis::REDIS_ZSET, $redis->type($resource), 'no prefix, no suffix: the key is the resource');
        $members = $redis->zRange($resource, 0, -1, true);
        $this->assertSame(self::sortedNames([$token => 0, '__write__' => 0]), self::sortedNames($members));
        $this->assertSame($members[$token], $members['__write__']);
        $this->assertSame((int) $members[$token], $redis->rawCommand('PEXPIRETIME', $resource), 'PEXPIREAT = the highest score');
        $serverNow = self::serverMilliseconds($redis);
        $this->assertGreaterThan($serverNow, (int) $members[$token]);
        $this->assertLessThanOrEqual($serverNow + 30_000, (int) $members[$token], 'score = server time + TTL in ms');
        $pttl = $redis->pttl($resource);
        $this->assertGreaterThan(0, $pttl);
        $this->assertLessThanOrEqual(30_000, $pttl);

        $lock->release();

        $this->assertSame(0, $redis->exists($resource), 'the last owner gone, the key is gone');
    }

    public function testReadLocksAreTokensWithoutWriteAndTheKeyLivesAsLongAsTheLongestReader(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new LockFactory($this->redisStore());
        $shortKey = new Key($resource);
        $longKey = new Key($resource);
        $short = $factory->createLockFromKey($shortKey, 10.0);
        $long = $factory->createLockFromKey($longKey, 60.0);

        $this->assertTrue($long->acquireRead());
        $this->assertTrue($short->acquireRead());

        $redis = $this->redis();
        $members = $redis->zRange($resource, 0, -1, true);
        $longToken = $longKey->__serialize()['token'];
        $shortToken = $shortKey->__serialize()['token'];
        $this->assertSame(self::sortedNames([$longToken => 0, $shortToken => 0]), self::sortedNames($members), 'no __write__ for readers');
        $this->assertGreaterThan($members[$shortToken], $members[$longToken]);
        $this->assertSame((int) $members[$longToken], $redis->rawCommand('PEXPIRETIME', $resource));

        $long->release();

        $this->assertSame([$shortToken], array_keys($redis->zRange($resource, 0, -1, true)));
        $this->assertSame((int) $members[$shortToken], $redis->rawCommand('PEXPIRETIME', $resource), 're-expired to the remaining reader');
        $short->release();
        $this->assertSame(0, $redis->exists($resource));
    }

    public function testAWriterDemotedToReaderDropsWrite(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $lock = (new LockFactory($this->redisStore()))->createLockFromKey($key, 30.0);
        $lock->acquire();

        $lock->acquireRead();

        $this->assertSame([$key->__serialize()['token']], array_keys($this->redis()->zRange($resource, 0, -1, true)));
    }

    public function testAnAcquireThatExpiresAtOnceFailsAndLeavesTheLockFree(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $factory = new LockFactory($this->redisStore());
        $lock = $factory->createLockFromKey($key, 0.000001);

        try {
            $lock->acquire();
            $this->fail('acquire() succeeded with a lock that expired on the way.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockExpiredException::class, $e->getPrevious());
        }

        $this->assertFalse($lock->isAcquired());
        $this->assertFalse($this->redis()->zScore($resource, $key->__serialize()['token']), 'the expired token was removed');
        $this->assertTrue($factory->createLock($resource, 30.0)->acquire(), 'the lock is free afterwards');
    }

    public function testAStoreSaveThatExpiresAtOnceIsALockExpiredException(): void
    {
        $store = $this->redisStore(0.000001);
        $resource = uniqid(__METHOD__, true);

        try {
            $store->save(new Key($resource));
            $this->fail('save() succeeded with a lock that expired on the way.');
        } catch (LockExpiredException $e) {
            $this->addToAssertionCount(1);
        }

        $other = new Key($resource);
        $this->redisStore()->save($other);
        $this->assertTrue($this->redisStore()->exists($other));
    }

    /**
     * A lock written by symfony/lock <= 5.1 (SET NX PX) is a string: held by someone else, and left alone.
     */
    public function testALegacyStringLockCountsAsHeldBySomeoneElse(): void
    {
        $resource = uniqid(__METHOD__, true);
        $this->redis()->set($resource, 'legacy-token', ['px' => 60_000]);
        $store = $this->redisStore();
        $key = new Key($resource);

        foreach (['save', 'saveRead'] as $method) {
            try {
                $store->$method($key);
                $this->fail($method.'() took a resource held by a legacy string lock.');
            } catch (LockConflictedException $e) {
                $this->addToAssertionCount(1);
            }
        }
        $this->assertFalse($store->exists($key));
        $store->delete($key);
        $lock = (new LockFactory($store))->createLock($resource, 30.0);
        $this->assertFalse($lock->acquire(false));
        $this->assertFalse($lock->acquireRead(false));
        $this->assertSame('legacy-token', $this->redis()->get($resource), 'the legacy lock is untouched');
    }

    /**
     * @dataProvider foreignTypes
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('foreignTypes')]
    public function testAKeyOfAnotherTypeIsAStorageErrorNamingTheType(string $type, callable $write): void
    {
        $resource = uniqid(__METHOD__, true);
        $write($this->redis(), $resource);
        $dump = $this->redis()->dump($resource);
        $store = $this->redisStore();

        foreach (['save', 'saveRead'] as $method) {
            try {
                $store->$method(new Key($resource));
                $this->fail("$method() accepted a $type key.");
            } catch (LockStorageException $e) {
                $this->assertStringContainsString($type, $e->getMessage());
            }
        }
        try {
            (new LockFactory($store))->createLock($resource, 30.0)->acquire();
            $this->fail("Lock::acquire() accepted a $type key.");
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            $this->assertStringContainsString($type, $e->getPrevious()->getMessage());
        }
        $this->assertSame($dump, $this->redis()->dump($resource), 'the key is left as it was');
    }

    /**
     * @return iterable<string, array{string, callable(\Redis, string): void}>
     */
    public static function foreignTypes(): iterable
    {
        yield 'hash' => ['hash', static function (\Redis $redis, string $key): void {
            $redis->hSet($key, 'field', 'value');
        }];
        yield 'list' => ['list', static function (\Redis $redis, string $key): void {
            $redis->rPush($key, 'a');
        }];
        yield 'set' => ['set', static function (\Redis $redis, string $key): void {
            $redis->sAdd($key, 'a');
        }];
    }

    public function testAcquireWithATtlAndReleaseAreOneRoundTripEach(): void
    {
        $factory = new LockFactory($this->redisStore());
        // The first run of each script may load it (NOSCRIPT, EVAL) and check the server's setup: not measured.
        $warmUp = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $warmUp->acquire();
        $warmUp->refresh();
        $warmUp->acquireRead();
        $warmUp->release();
        $lock = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $reader = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $monitor = new RedisMonitor(SharedRedis::port());

        try {
            $this->assertSame(['evalsha'], $monitor->commandsDuring(static fn () => $lock->acquire()), 'acquire()');
            $this->assertSame(['evalsha'], $monitor->commandsDuring(static fn () => $lock->refresh()), 'refresh()');
            $this->assertSame(['evalsha'], $monitor->commandsDuring(static fn () => $lock->release()), 'release()');
            $this->assertSame(['evalsha'], $monitor->commandsDuring(static fn () => $reader->acquireRead()), 'acquireRead()');
            $this->assertSame(['evalsha'], $monitor->commandsDuring(static fn () => $reader->release()), 'release() of a reader');
        } finally {
            $monitor->close();
        }
    }

    /**
     * The auto-release of a Lock dying while an exception unwinds the stack runs a Redis call; the exception must
     * still reach its catch block unchanged.
     */
    public function testAnExceptionThrownWhileALockIsHeldPropagatesThroughItsAutoRelease(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->redisStore();
        $thrown = new \RuntimeException('thrown while the lock is held');

        try {
            (static function () use ($store, $resource, $thrown): void {
                $lock = (new LockFactory($store))->createLock($resource, 30.0);
                $lock->acquire();
                throw $thrown;
            })();
            $caught = null;
        } catch (\Throwable $e) {
            $caught = $e;
        }

        $this->assertSame($thrown, $caught, 'the exception came out of the function');
        $this->assertSame(0, $this->redis()->exists($resource), 'and the lock was released on the way');
    }

    public function testUnsetReleasesAHeldLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->redisStore()))->createLock($resource, 30.0);
        $lock->acquire();
        $this->assertSame(1, $this->redis()->exists($resource));

        unset($lock);

        $this->assertSame(0, $this->redis()->exists($resource));
        $this->assertTrue((new LockFactory($this->redisStore()))->createLock($resource)->acquire());
    }

    public function testALockHeldWhenItsProcessExitsIsReleased(): void
    {
        $resource = uniqid(__METHOD__, true);

        $result = PhpProcess::run(static::storeCode().<<<'PHP'
            $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], 300.0);
            echo $lock->acquire() ? 'acquired' : 'refused';
            exit(0);
            PHP, $this->childVars(['resource' => $resource]));

        $this->assertSame(['exit' => 0, 'stdout' => 'acquired', 'stderr' => ''], $result);
        $this->assertSame(0, $this->redis()->exists($resource), 'released at shutdown');
    }

    public function testAKeyReleasedInAnotherProcessIsFreeHere(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $store = $this->redisStore();
        $lock = (new LockFactory($store))->createLockFromKey($key, 60.0, false);
        $lock->acquire();

        $result = PhpProcess::run(static::storeCode().<<<'PHP'
            $key = unserialize($vars['key']);
            $lock = (new Deadbolt\LockFactory($store))->createLockFromKey($key, 120.0);
            echo $lock->isAcquired() ? 'held,' : 'not held,';
            $lock->refresh();
            echo round($lock->getRemainingLifetime()) > 60 ? 'refreshed,' : 'not refreshed,';
            $lock->release();
            echo $lock->isAcquired() ? 'still held' : 'released';
            PHP, $this->childVars(['key' => serialize($key)]));

        $this->assertSame(['exit' => 0, 'stdout' => 'held,refreshed,released', 'stderr' => ''], $result);
        $this->assertFalse($lock->isAcquired());
        $this->assertTrue((new LockFactory($store))->createLock($resource)->acquire());
    }

    /**
     * @param array<string, mixed> $vars
     *
     * @return array<string, mixed>
     */
    protected function childVars(array $vars = []): array
    {
        return $vars + ['port' => SharedRedis::port()];
    }

    /**
     * @param array<string, mixed> $members
     *
     * @return list<string>
     */
    protected static function sortedNames(array $members): array
    {
        $names = array_map('strval', array_keys($members));
        sort($names, SORT_STRING);

        return $names;
    }

    protected static function serverMilliseconds(\Redis $redis): int
    {
        [$seconds, $micros] = $redis->time();

        return (int) $seconds * 1000 + intdiv((int) $micros, 1000);
    }
}
