<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisClusterServers;
use Deadbolt\Tests\Support\RedisServer;

/**
 * RedisStore over a phpredis \RedisCluster against a real three-master Redis Cluster: locks land on different
 * nodes, every script's keys (the resource and Deadbolt's companions) share one hash slot, also for a resource that
 * carries its own hash tag, and a release hands the lock over to a waiter of another process blocked in BLPOP.
 */
final class RedisClusterTest extends DeadboltTestCase
{
    private static ?RedisClusterServers $cluster = null;

    public static function setUpBeforeClass(): void
    {
        self::$cluster = RedisClusterServers::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$cluster?->stop();
        self::$cluster = null;
    }

    public function testLocksOnManyResourcesLiveOnSeveralNodes(): void
    {
        $factory = new LockFactory(new RedisStore(self::cluster()->client()));
        $rival = new LockFactory(new RedisStore(self::cluster()->client()));
        $locks = [];
        for ($i = 0; $i < 30; ++$i) {
            $name = "cluster-$i-".bin2hex(random_bytes(3));
            $locks[$name] = $factory->createLock($name, 30.0);
            $this->assertTrue($locks[$name]->acquire(), $name);
            $this->assertFalse($rival->createLock($name, 30.0)->acquire(false), "$name is held");
        }
        $keysPerNode = array_map(static fn (RedisServer $node): int => $node->client()->dbSize(), self::cluster()->nodes);
        $this->assertSame(30, array_sum($keysPerNode), 'one key per lock, nothing else');
        $this->assertGreaterThanOrEqual(2, \count(array_filter($keysPerNode)), 'the locks live on several nodes');

        foreach ($locks as $name => $lock) {
            $lock->release();
            $next = $rival->createLock($name, 30.0);
            $this->assertTrue($next->acquire(false), "$name is free after release");
            $next->release();
        }
        $this->assertSame(0, array_sum(array_map(static fn (RedisServer $node): int => $node->client()->dbSize(), self::cluster()->nodes)));
    }

    public function testAResourceWithItsOwnHashTagKeepsDeadboltsKeysInItsSlot(): void
    {
        $factory = new LockFactory(new RedisStore(self::cluster()->client()));
        $resource = 'user:{'.bin2hex(random_bytes(4)).'}:cart';

        $lock = $factory->createLock($resource, 30.0);
        $this->assertTrue($lock->acquire());
        $first = $lock->getFencingToken();
        $this->assertIsInt($first, 'the fencing counter sits in the slot of the resource');
        $this->assertFalse($factory->createLock($resource, 30.0)->acquire(true, 0.3), 'a wait (queue, BLPOP) runs out');
        $lock->release();

        $this->assertTrue($lock->acquire());
        $this->assertGreaterThan($first, $lock->getFencingToken());
        $lock->release();

        $reader = $factory->createLock($resource, 30.0);
        $this->assertTrue($reader->acquireRead());
        $this->assertTrue($factory->createLock($resource, 30.0)->acquireRead(), 'readers share');
        $this->assertFalse($factory->createLock($resource, 30.0)->acquire(false), 'a writer waits for the readers');
        $reader->release();
    }

    public function testAReleaseHandsTheLockOverToAWaiterOfAnotherProcess(): void
    {
        $resource = 'cluster-hand-over-'.bin2hex(random_bytes(4));
        $holder = (new LockFactory(new RedisStore(self::cluster()->client())))->createLock($resource, 60.0);
        $this->assertTrue($holder->acquire());
        $seeds = self::cluster()->seeds();
        $waiter = $this->fork(static function (Channel $parent) use ($seeds, $resource): void {
            $lock = (new LockFactory(new RedisStore(new \RedisCluster(null, $seeds, 5.0, 5.0))))->createLock($resource, 60.0);
            Metrics::reset();
            $acquired = $lock->acquire(true, 20.0);
            $parent->send(serialize(['acquired' => $acquired, 'counters' => Metrics::snapshot()['counters']]));
            if ('bye' !== $parent->receive()) {
                throw new \RuntimeException('unexpected message');
            }
            $lock->release();
        });
        $this->assertTrue(self::untilSomeoneBlocksInBlpop(), 'the waiter blocks in BLPOP on the node of the resource');
        $holder->release();

        $result = unserialize($waiter->receive(30.0));
        $this->assertTrue($result['acquired'], 'the waiter took the lock');
        $this->assertSame(1, $result['counters']['wakeups'], 'handed over: '.json_encode($result['counters']));
        $this->assertFalse($holder->acquire(false), 'the waiter holds it now');
        $waiter->send('bye');
        $waiter->wait(10.0);
        $this->assertTrue($holder->acquire(false), 'free once the waiter released');
        $holder->release();
    }

    private static function cluster(): RedisClusterServers
    {
        return self::$cluster ?? throw new \LogicException('the cluster is not running');
    }

    private static function untilSomeoneBlocksInBlpop(): bool
    {
        $clients = array_map(static fn (RedisServer $node): \Redis => $node->client(), self::cluster()->nodes);
        $deadline = hrtime(true) + 10_000_000_000;
        while (hrtime(true) < $deadline) {
            foreach ($clients as $client) {
                foreach ($client->client('list') as $entry) {
                    if ('blpop' === ($entry['cmd'] ?? '') && str_contains((string) ($entry['flags'] ?? ''), 'b')) {
                        return true;
                    }
                }
            }
            usleep(2000);
        }

        return false;
    }
}
