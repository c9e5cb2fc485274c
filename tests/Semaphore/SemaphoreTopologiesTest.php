<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisClusterServers;
use Deadbolt\Tests\Support\ReplicatedPair;
use Deadbolt\Tests\Support\SentinelGroup;

/**
 * Semaphores beyond one plain server: a Redis Cluster (a semaphore's keys, symfony/semaphore's and Deadbolt's, share
 * one hash slot, so each script runs on the node of that slot; names spread over the nodes) and replica
 * acknowledgement (`replicas=1`: a slot counts once the replica has it, a hand-over included).
 */
final class SemaphoreTopologiesTest extends DeadboltTestCase
{
    /** @return iterable<string, array{string}> */
    public static function topologies(): iterable
    {
        yield 'Redis Cluster' => ['cluster'];
        yield 'replicas=1' => ['replicas'];
    }

    /** @dataProvider topologies */
    #[\PHPUnit\Framework\Attributes\DataProvider('topologies')]
    public function testTheLimitHoldsAndAReleaseHandsTheSlotToAWaiter(string $topology): void
    {
        if ('cluster' === $topology) {
            $servers = RedisClusterServers::start();
            $dsn = $servers->dsn();
        } else {
            $servers = ReplicatedPair::start();
            $dsn = $servers->primary->dsn('?replicas=1&replicas_timeout=5');
        }
        try {
            $factory = new SemaphoreFactory(new RedisStore($dsn));
            // Names in many hash slots: on a cluster, on every node.
            for ($n = 0; $n < 12; ++$n) {
                $resource = uniqid("topology:$n:", true);
                $first = $factory->createSemaphore($resource, 2, 1, 30.0);
                $second = $factory->createSemaphore($resource, 2, 1, 30.0);
                $this->assertTrue($first->acquire());
                $this->assertTrue($second->acquire());
                $this->assertFalse($factory->createSemaphore($resource, 2)->acquire(), "$resource: 2 of 2 held");
                $first->release();
                $second->release();
            }

            $resource = uniqid('topology:handover:', true);
            $holder = $factory->createSemaphore($resource, 1, 1, 30.0);
            $this->assertTrue($holder->acquire());
            $waiter = $this->fork(static function (Channel $parent) use ($dsn, $resource): void {
                $semaphore = (new SemaphoreFactory(new RedisStore($dsn)))->createSemaphore($resource, 1, 1, 30.0);
                $parent->send('waiting');
                $parent->send($semaphore->acquire(true, 60.0) && $semaphore->isAcquired() ? 'handed over' : 'not had');
            });
            $this->assertSame('waiting', $waiter->receive());
            // The waiter queues within its first attempt; a release before that is taken at its next one.
            $holder->release();
            $this->assertSame('handed over', $waiter->receive());
            $waiter->wait();
        } finally {
            $servers->stop();
        }
    }

    /**
     * Slots a replica acknowledged (`replicas=1`) are on the replica Sentinel promotes when the primary dies: the
     * limit still holds there, and their holders keep them (a refresh on the new primary finds them, acknowledged by
     * the other replica once it follows the new primary).
     */
    public function testAcknowledgedSlotsOutliveAFailover(): void
    {
        $group = SentinelGroup::start(2);
        try {
            $factory = new SemaphoreFactory(new RedisStore($group->dsn('replicas=1&replicas_timeout=5')));
            $resource = uniqid('failover:', true);
            $first = $factory->createSemaphore($resource, 2, 1, 60.0);
            $second = $factory->createSemaphore($resource, 2, 1, 60.0);
            $this->assertTrue($first->acquire());
            $this->assertTrue($second->acquire());

            $old = $group->servers[0];
            $old->stop();
            $new = $group->waitForFailoverFrom($old);

            $this->assertSame(2, $new->client()->zCard('{'.$resource.'}:weight'), 'both slots are on the new primary');
            // The other replica follows the new primary (the sentinels move it), to acknowledge what comes next.
            $deadline = microtime(true) + 60.0;
            while (!str_contains((string) $new->client()->rawCommand('INFO', 'replication'), 'connected_slaves:1') && microtime(true) < $deadline) {
                usleep(50_000);
            }
            $this->assertFalse($factory->createSemaphore($resource, 2)->acquire(), 'the limit holds after the failover');
            $first->refresh();
            $this->assertTrue($first->isAcquired());
            $second->release();
            $this->assertTrue($factory->createSemaphore($resource, 2)->acquire(), 'a release on the new primary frees a slot');
        } finally {
            $group->stop();
        }
    }
}
