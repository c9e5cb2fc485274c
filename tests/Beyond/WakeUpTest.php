<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Beyond;

use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\ForkedChild;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * Redis waits (DSN stores): a Deadbolt release pushes a signal that wakes a waiter of another process blocked in
 * BLPOP; a symfony/lock holder does not signal, and the waiter still gets the lock by polling. Which of the two
 * happened is told by the waiter's own Deadbolt\Metrics (wakeups / polls), never by a clock.
 */
final class WakeUpTest extends BeyondTestCase
{
    public function testADeadboltReleaseWakesAWaiterOfAnotherProcess(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $holder = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 60.0);
        $this->assertTrue($holder->acquire());

        $waiter = $this->startWaiter($dsn, $resource);
        $this->assertTrue(self::waitUntilBlockedInRedis($waiter->pid), 'the waiter blocks in BLPOP');
        $holder->release();

        $result = unserialize($waiter->receive(30.0));
        $this->assertTrue($result['acquired'], 'the waiter took the lock');
        $this->assertGreaterThanOrEqual(1, $result['counters']['wakeups'], 'the waiter was woken by the release signal: '.json_encode($result['counters']));
        $this->assertSame(1, $result['counters']['acquired']);
        $this->assertSame(0, $result['counters']['timeouts']);
        $this->assertFalse($holder->acquire(false), 'the waiter holds it now');
        $waiter->send('bye');
        $waiter->wait(10.0);
        $this->assertTrue($holder->acquire(false), 'free once the waiter released');
        $holder->release();
    }

    public function testASymfonyHolderThatDoesNotSignalStillHandsTheLockOver(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $connection = SharedRedis::newPhpRedis();
        $symfony = (new SymfonyLockFactory(new SymfonyRedisStore($connection)))->createLock($resource, 60.0);
        $this->assertTrue($symfony->acquire());

        $waiter = $this->startWaiter($dsn, $resource);
        $this->assertTrue(self::waitUntilBlockedInRedis($waiter->pid), 'the waiter blocks in BLPOP');
        $symfony->release();

        $result = unserialize($waiter->receive(30.0));
        $this->assertTrue($result['acquired'], 'the waiter took the lock');
        $this->assertGreaterThanOrEqual(1, $result['counters']['polls'], 'the waiter found it by polling: '.json_encode($result['counters']));
        $this->assertSame(0, $result['counters']['wakeups'], 'no signal, so no wake-up');
        $this->assertFalse($symfony->acquire(false), 'symfony/lock sees the Deadbolt waiter holding it');
        $waiter->send('bye');
        $waiter->wait(10.0);
        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
        $connection->close();
    }

    /**
     * A forked child that resets its metrics, waits in acquire(true, 10) and sends back the outcome with its counters;
     * it holds the lock until told 'bye'.
     */
    private function startWaiter(string $dsn, string $resource): ForkedChild
    {
        return $this->fork(static function (Channel $parent) use ($dsn, $resource): void {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 60.0);
            Metrics::reset();
            $acquired = $lock->acquire(true, 10.0);
            $parent->send(serialize(['acquired' => $acquired, 'counters' => Metrics::snapshot()['counters']]));
            if ('bye' !== $parent->receive()) {
                throw new \RuntimeException('unexpected message');
            }
            $lock->release();
        });
    }
}
