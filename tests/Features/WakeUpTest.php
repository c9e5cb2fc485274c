<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\ForkedChild;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * Redis waits: a Deadbolt release hands the lock over to a waiter of another process blocked in BLPOP (a DSN store,
 * or a \Redis / Predis client with a key prefix); a symfony/lock holder does not hand over, and the waiter still gets
 * the lock by polling. Which of the two happened is told by the waiter's own Deadbolt\Metrics (wakeups / polls),
 * never by a clock.
 */
final class WakeUpTest extends FeatureTestCase
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
     * @return iterable<string, array{string}>
     */
    public static function prefixedClients(): iterable
    {
        yield 'phpredis' => ['phpredis'];
        yield 'Predis' => ['predis'];
    }

    /**
     * The waiter BLPOPs through the client, on its grant list under the client's key prefix, and the release (through
     * another connection with the same prefix) hands the lock over to it.
     *
     * @dataProvider prefixedClients
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('prefixedClients')]
    public function testAReleaseHandsTheLockToAWaiterOnAPrefixedPhpClient(string $flavour): void
    {
        $prefix = uniqid('deadbolt-prefix-', true).':';
        $resource = 'hand-over-'.bin2hex(random_bytes(6));
        // Predis 1.1's key-prefix processor uses "static::" callables, which PHP 8.2 reports as deprecated.
        $reporting = error_reporting(E_ALL & ~E_DEPRECATED);
        try {
            $holder = (new LockFactory(new RedisStore(self::prefixedClient($flavour, $prefix))))->createLock($resource, 60.0);
            $this->assertTrue($holder->acquire());

            $waiter = $this->startWaiter(null, $resource, static fn (): object => self::prefixedClient($flavour, $prefix));
            $this->assertTrue(self::waitUntilBlockedInRedis($waiter->pid), 'the waiter blocks in BLPOP');
            $holder->release();

            $result = unserialize($waiter->receive(30.0));
            $this->assertTrue($result['acquired'], 'the waiter took the lock');
            $this->assertSame(1, $result['counters']['wakeups'], 'handed over: '.json_encode($result['counters']));
            $this->assertSame(1, SharedRedis::client()->exists($prefix.$resource), 'the lock is under the prefix');
            $this->assertFalse($holder->acquire(false), 'the waiter holds it now');
            $waiter->send('bye');
            $waiter->wait(10.0);
            $this->assertTrue($holder->acquire(false), 'free once the waiter released');
            $holder->release();
        } finally {
            error_reporting($reporting);
        }
        $admin = SharedRedis::client();
        foreach ($admin->keys('*'.$resource.'*') as $left) {
            // Only the waiters' details (RESOURCE#deadbolt:waiters...), which expire within a second.
            $this->assertStringStartsWith($prefix.$resource.'#deadbolt:waiters', $left);
            $this->assertLessThanOrEqual(1000, $admin->pttl($left), $left);
            $this->assertGreaterThan(0, $admin->pttl($left), $left);
        }
    }

    private static function prefixedClient(string $flavour, string $prefix): object
    {
        if ('predis' === $flavour) {
            return SharedRedis::newPredis(['prefix' => $prefix]);
        }
        $client = SharedRedis::newPhpRedis();
        $client->setOption(\Redis::OPT_PREFIX, $prefix);

        return $client;
    }

    /**
     * A forked child that resets its metrics, waits in acquire(true, 10) and sends back the outcome with its counters;
     * it holds the lock until told 'bye'. Its store is on $dsn, or on the client $client() makes.
     */
    private function startWaiter(?string $dsn, string $resource, ?\Closure $client = null): ForkedChild
    {
        return $this->fork(static function (Channel $parent) use ($dsn, $resource, $client): void {
            $lock = (new LockFactory(new RedisStore($dsn ?? $client())))->createLock($resource, 60.0);
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
