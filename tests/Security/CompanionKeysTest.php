<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Security;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * The keys Deadbolt keeps beside a Redis lock (its waiters, hand-overs and fencing counter) never share a name with a
 * resource: no lock, whatever its name, is another lock's bookkeeping, and the fencing counter does not live forever.
 */
final class CompanionKeysTest extends DeadboltTestCase
{
    /** @return iterable<string, array{string}> */
    public static function connections(): iterable
    {
        yield 'by DSN' => ['dsn'];
        yield 'through \Redis' => ['phpredis'];
    }

    private function factory(string $connection): LockFactory
    {
        return new LockFactory('dsn' === $connection ? new RedisStore(SharedRedis::dsn()) : new RedisStore(SharedRedis::newPhpRedis()));
    }

    /**
     * Locks named as older Deadbolts named the bookkeeping of x are locks like any other: a wait on x, and its
     * hand-over, leave them alone (they used to lose their TTL, or break the wait with WRONGTYPE).
     *
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testALockNamedLikeTheBookkeepingOfAnotherIsLeftAlone(string $connection): void
    {
        $factory = $this->factory($connection);
        $x = 'companion-'.bin2hex(random_bytes(6));
        $names = ['deadbolt:waiters:{'.$x.'}', 'deadbolt:waiting:{'.$x.'}', 'deadbolt:handovers:{'.$x.'}', 'deadbolt:fence:{'.$x.'}'];
        $held = [];
        foreach ($names as $name) {
            $held[$name] = $factory->createLock($name, 300.0, false);
            $this->assertTrue($held[$name]->acquire(), $name);
        }

        $holder = $factory->createLock($x, 300.0, false);
        $this->assertTrue($holder->acquire());
        $this->assertIsInt($holder->getFencingToken());
        $waiter = $factory->createLock($x, 300.0, false);
        $this->assertFalse($waiter->acquire(true, 0.3), 'x is held');
        $holder->release();
        $this->assertTrue($waiter->acquire(false));
        $this->assertIsInt($waiter->getFencingToken());
        $waiter->release();

        $inspector = SharedRedis::client();
        foreach ($held as $name => $lock) {
            $this->assertTrue($lock->isAcquired(), $name);
            $this->assertGreaterThan(200_000, $inspector->pTtl($name), $name.' keeps its own TTL');
            $this->assertFalse($factory->createLock($name, 30.0, false)->acquire(false), $name.' still has one holder');
            $lock->release();
            $this->assertSame(0, $inspector->exists($name), $name);
        }
    }

    /**
     * A name that holds Deadbolt's mark would be taken for its bookkeeping: refused, before Redis is asked.
     *
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testAResourceNameHoldingTheMarkIsRefused(string $connection): void
    {
        $factory = $this->factory($connection);
        $store = 'dsn' === $connection ? new RedisStore(SharedRedis::dsn()) : new RedisStore(SharedRedis::newPhpRedis());
        foreach (['x#deadbolt:queue{x}', '#deadbolt:', 'jobs:7#deadbolt:fence'] as $name) {
            try {
                $factory->createLock($name)->acquire();
                $this->fail('acquire() took '.$name);
            } catch (LockAcquiringException $e) {
                // As symfony/lock's Lock wraps every store failure but a conflict.
                $this->assertInstanceOf(InvalidArgumentException::class, $e->getPrevious());
                $this->assertStringContainsString('"'.$name.'"', $e->getPrevious()->getMessage());
                $this->assertStringContainsString('"#deadbolt:"', $e->getPrevious()->getMessage());
            }
            try {
                $store->save(new Key($name));
                $this->fail('save() took '.$name);
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString('reserves', $e->getMessage());
            }
            $this->assertSame(0, SharedRedis::client()->exists($name));
        }
    }

    /**
     * The fencing counter expires after the hold it fenced, and tokens keep increasing without it (they follow the
     * server clock), and past a counter that is ahead of the clock.
     *
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testTheFencingCounterExpiresAndTokensStillIncrease(string $connection): void
    {
        $factory = $this->factory($connection);
        $z = 'fenced-'.bin2hex(random_bytes(6));
        $counter = $z.'#deadbolt:fence{'.$z.'}';
        $inspector = SharedRedis::client();

        $lock = $factory->createLock($z, 30.0, false);
        $this->assertTrue($lock->acquire());
        $first = $lock->getFencingToken();
        $this->assertIsInt($first);
        $lock->release();
        $ttl = $inspector->pTtl($counter);
        $this->assertGreaterThan(0, $ttl, 'the counter has an expiry');
        $this->assertLessThanOrEqual(90_000, $ttl, 'the counter outlives the 30 s hold by a minute at most');

        $inspector->del($counter);
        $this->assertTrue($lock->acquire());
        $second = $lock->getFencingToken();
        $this->assertGreaterThan($first, $second, 'a token after the counter is gone');
        $lock->release();

        $ahead = $second + 10_000_000_000;
        $inspector->set($counter, (string) $ahead);
        $this->assertTrue($lock->acquire());
        $this->assertSame($ahead + 1, $lock->getFencingToken(), 'a counter ahead of the clock is followed');
        $lock->release();
    }
}
