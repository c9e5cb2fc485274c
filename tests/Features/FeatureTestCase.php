<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Store\SemaphoreStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Shared machinery of the suites of the features Deadbolt adds to symfony/lock (deadlines, wake-ups, fencing tokens,
 * metrics, the refresher; docs/API-CONTRACT.md): a lock held by another process, the CPU
 * time a process used, and the Redis connection a process is blocked on.
 *
 * Store kinds: 'flock' (a private directory), 'redis' (the shared server through its DSN, so DEADBOLT_REDIS_PORT
 * must be set: without it the test fails, it never skips), 'memory' (one InMemoryStore, so one process).
 */
abstract class FeatureTestCase extends DeadboltTestCase
{
    /**
     * @return iterable<string, array{'flock'|'redis'|'memory'|'semaphore'}>
     */
    public static function allKinds(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'RedisStore (DSN)' => ['redis'];
        yield 'InMemoryStore' => ['memory'];
        yield 'SemaphoreStore' => ['semaphore'];
    }

    /**
     * The stores that draw fencing tokens (all but SemaphoreStore, whose semaphore sets keep no counter).
     *
     * @return iterable<string, array{'flock'|'redis'|'memory'}>
     */
    public static function fencingKinds(): iterable
    {
        foreach (self::allKinds() as $name => $kind) {
            if (['semaphore'] !== $kind) {
                yield $name => $kind;
            }
        }
    }

    /**
     * The stores whose locks another process can hold.
     *
     * @return iterable<string, array{'flock'|'redis'}>
     */
    public static function sharedKinds(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'RedisStore (DSN)' => ['redis'];
    }

    /**
     * Where the locks of a kind live: a directory for flock, the DSN for Redis, nothing for in-memory.
     *
     * @param 'flock'|'redis'|'memory'|'semaphore' $kind
     */
    protected function placeFor(string $kind): string
    {
        return match ($kind) {
            'flock' => $this->tempDir(),
            'redis' => SharedRedis::dsn(),
            'memory', 'semaphore' => '',
        };
    }

    /**
     * A factory on the store of $kind at $place; call it in the process that uses it (a forked child makes its own).
     *
     * @param 'flock'|'redis'|'memory'|'semaphore' $kind
     */
    protected static function factoryFor(string $kind, string $place): LockFactory
    {
        return new LockFactory(match ($kind) {
            'flock' => new FlockStore($place),
            'redis' => new RedisStore($place),
            'memory' => new InMemoryStore(),
            'semaphore' => new SemaphoreStore(),
        });
    }

    /**
     * Runs $body while another holder has $resource, then lets the holder go.
     *
     * flock and Redis: the holder is a forked child that acquires with $holderMode, and $body runs in this process.
     * in-memory: locks live in one store object, so holder and $body both run in one forked child (a hung wait then
     * ends as a killed child instead of a hung suite); assertion failures in it come back through ForkedChild::wait().
     * The holder gives the lock up after 60 s at the latest (a wait that never ends then fails instead of hanging).
     *
     * @param 'flock'|'redis'|'memory'|'semaphore'                $kind
     * @param 'acquire'|'acquireRead'                 $holderMode
     * @param callable(LockFactory, string): void $body gets the factory of this process and the resource
     */
    protected function whileHeldElsewhere(string $kind, callable $body, string $holderMode = 'acquire'): void
    {
        $place = $this->placeFor($kind);
        $resource = uniqid(static::class.'::held:', true);

        if ('memory' === $kind) {
            $child = $this->fork(function (Channel $parent) use ($body, $resource, $holderMode): void {
                $factory = self::factoryFor('memory', '');
                $holder = $factory->createLock($resource, 60.0);
                $this->assertTrue($holder->$holderMode(false), 'the holder takes the free lock');
                $body($factory, $resource);
                $this->assertTrue($holder->isAcquired(), 'the holder still holds after the body');
                $holder->release();
                $parent->send('done');
            });
            $this->assertSame('done', $child->receive(60.0), 'the in-memory scenario ran to its end');
            $child->wait(10.0);

            return;
        }

        $child = $this->fork(function (Channel $parent) use ($kind, $place, $resource, $holderMode): void {
            $holder = self::factoryFor($kind, $place)->createLock($resource, 120.0);
            $this->assertTrue($holder->$holderMode(false), 'the holder takes the free lock');
            $parent->send('holding');
            $this->assertSame('release', $parent->receive(60.0));
            $this->assertTrue($holder->isAcquired(), 'the holder still holds after the body');
            $holder->release();
            $parent->send('released');
        });
        $this->assertSame('holding', $child->receive());
        $body(self::factoryFor($kind, $place), $resource);
        $child->send('release');
        $this->assertSame('released', $child->receive());
        $child->wait(10.0);
    }

    /**
     * User plus system CPU time of this whole process (every thread, helper threads of the extension included).
     */
    protected static function cpuSeconds(): float
    {
        $usage = getrusage(0);

        return $usage['ru_utime.tv_sec'] + $usage['ru_utime.tv_usec'] / 1e6
            + $usage['ru_stime.tv_sec'] + $usage['ru_stime.tv_usec'] / 1e6;
    }

    /**
     * Seconds since an hrtime(true) reading.
     */
    protected static function since(int|float $start): float
    {
        return (hrtime(true) - $start) / 1e9;
    }

    /**
     * Waits until process $pid is blocked in a BLPOP on the shared server (the Redis wait of a Deadbolt lock).
     * Best effort with a bound, like DeadboltTestCase::waitUntilSleeping(): returns false when that did not show.
     */
    protected static function waitUntilBlockedInRedis(int $pid, ?int $port = null, float $bound = 10.0): bool
    {
        $port ??= SharedRedis::port();
        $inspector = new \Redis();
        $inspector->connect('127.0.0.1', $port, 5.0);
        try {
            $deadline = hrtime(true) + (int) ($bound * 1e9);
            while (hrtime(true) < $deadline) {
                $ids = SharedRedis::clientIdsOfProcess($inspector, $pid, $port);
                foreach ($inspector->client('list') as $client) {
                    if (\in_array((int) $client['id'], $ids, true) && 'blpop' === ($client['cmd'] ?? '')
                        && str_contains((string) ($client['flags'] ?? ''), 'b')) {
                        return true;
                    }
                }
                usleep(2000);
            }

            return false;
        } finally {
            $inspector->close();
        }
    }

    /**
     * Asserts that the buckets of a snapshot histogram are the contract's bounds, cumulative, ending with '+Inf' = count.
     *
     * @param array{count: int, sum: float, buckets: array<int|string, int>} $histogram
     */
    protected static function assertWellFormedHistogram(array $histogram, string $name): void
    {
        $bounds = ['0.0005', '0.001', '0.0025', '0.005', '0.01', '0.025', '0.05', '0.1', '0.25', '1', '5', '30', '+Inf'];
        self::assertSame($bounds, array_map('strval', array_keys($histogram['buckets'])), "$name: the bucket bounds");
        self::assertSame('+Inf', array_key_last($histogram['buckets']), "$name: '+Inf' is the last bucket");
        self::assertSame($histogram['count'], $histogram['buckets']['+Inf'], "$name: '+Inf' == count");
        $previous = 0;
        foreach ($histogram['buckets'] as $le => $cumulative) {
            self::assertIsInt($cumulative, "$name: bucket $le");
            self::assertGreaterThanOrEqual($previous, $cumulative, "$name: buckets are cumulative (le=$le)");
            $previous = $cumulative;
        }
        self::assertIsInt($histogram['count'], "$name: count");
        self::assertIsFloat($histogram['sum'], "$name: sum");
        self::assertGreaterThanOrEqual(0.0, $histogram['sum'], "$name: sum");
    }
}
