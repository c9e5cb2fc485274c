<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Runtime;

use Deadbolt\Key;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * The webman/Workerman model: a master process builds the LockFactory and its stores (FlockStore, RedisStore from a
 * DSN, RedisStore over a \Redis object), holds locks of its own, then pcntl_fork()s long-lived workers that each run
 * thousands of lock operations on their own and shared resources, through the inherited factories and through a
 * \Redis connection of their own (what a worker opens in onWorkerStart).
 *
 * Judges: two counter files incremented under lock (exact totals, fencing tokens strictly increasing in file order),
 * CLIENT LIST matched against each process's sockets in /proc (every worker opened one DSN connection of its own and
 * kept it; the master's connections untouched), Redis itself (ZSCORE of the master's tokens after every worker
 * exited), a fresh php process (the master's flock lock still held), exit codes, and Deadbolt\Metrics in each worker
 * (starts at zero after the fork, ends equal to the operations the worker counted itself).
 *
 * 1000 operations per worker by default; DEADBOLT_SOAK=1 runs 20000. DEADBOLT_REPORT names a file that gets a summary
 * line.
 */
final class WorkerModelTest extends DeadboltTestCase
{
    /** A database of its own, so that every connection to it comes from this test. */
    private const DB = 10;

    private const WORKERS = 4;

    private const COUNTERS = ['counter-flock', 'counter-redis'];

    public function testForkedWorkersShareNothingWithTheMasterAndCountEveryOperation(): void
    {
        $operations = '1' === getenv('DEADBOLT_SOAK') ? 20_000 : 1_000;
        $dir = $this->tempDir();
        $lockDir = $dir.'/locks';
        $prefix = 'wm-'.bin2hex(random_bytes(5)).'-';
        foreach (self::COUNTERS as $counter) {
            file_put_contents("$dir/$counter", '0 0');
        }
        $inspector = SharedRedis::newPhpRedis();
        $inspector->select(self::DB);
        $inspectorId = (int) $inspector->rawCommand('CLIENT', 'ID');

        // The master: factories and stores, built once, before the fork.
        $flockFactory = new LockFactory(new FlockStore($lockDir));
        $dsnFactory = new LockFactory(new RedisStore(SharedRedis::dsn('/'.self::DB)));
        $masterRedis = SharedRedis::newPhpRedis();
        $masterRedis->select(self::DB);
        $clientFactory = new LockFactory(new RedisStore($masterRedis));

        $masterDsnKey = new Key($prefix.'master-dsn');
        $masterDsnLock = $dsnFactory->createLockFromKey($masterDsnKey, 300.0);
        $this->assertTrue($masterDsnLock->acquire(), 'the master takes its DSN lock');
        $masterDsnToken = $masterDsnKey->__serialize()['token'];
        $masterClientKey = new Key($prefix.'master-client');
        $masterClientLock = $clientFactory->createLockFromKey($masterClientKey, 300.0);
        $this->assertTrue($masterClientLock->acquire(), 'the master takes its lock through its \Redis object');
        $masterClientToken = $masterClientKey->__serialize()['token'];
        $masterFlockLock = $flockFactory->createLock($prefix.'master-flock', 300.0);
        $this->assertTrue($masterFlockLock->acquire(), 'the master takes its flock lock');
        foreach ([$flockFactory, $dsnFactory, $clientFactory] as $factory) {
            $warm = $factory->createLock($prefix.'shared-rw', 30.0);
            $this->assertTrue($warm->acquire(), 'the master uses the shared resource before the fork');
            $warm->release();
        }
        $masterConnections = array_values(array_diff(
            SharedRedis::clientIdsOfProcess($inspector, posix_getpid(), SharedRedis::port(), self::DB),
            [$inspectorId]
        ));
        $this->assertCount(2, $masterConnections, 'the master has its DSN connection and its \Redis object\'s connection');
        $masterMetrics = Metrics::snapshot();
        $this->assertGreaterThanOrEqual(6, $masterMetrics['counters']['acquired']);

        $workers = [];
        for ($n = 0; $n < self::WORKERS; ++$n) {
            $workers[$n] = $this->fork(function (Channel $master) use (
                $n, $operations, $dir, $prefix, $flockFactory, $dsnFactory, $masterDsnLock, $masterClientLock, $masterFlockLock
            ): void {
                $this->runWorker($master, $n, $operations, $dir, $prefix, $flockFactory, $dsnFactory, [$masterDsnLock, $masterClientLock, $masterFlockLock]);
            });
        }

        // Every worker has used the inherited DSN store once and opened its own \Redis connection.
        $ownClientIds = [];
        foreach ($workers as $n => $worker) {
            $ready = $worker->receive();
            $this->assertMatchesRegularExpression('/^ready \d+$/', $ready);
            $ownClientIds[$n] = (int) substr($ready, 6);
        }
        $dsnConnections = $this->workerDsnConnections($inspector, $workers, $masterConnections, $inspectorId, $ownClientIds);
        $addresses = $this->addressesOf($inspector, array_merge($masterConnections, ...array_values($dsnConnections)));
        foreach ($dsnConnections as $n => $ids) {
            $this->assertCount(1, $ids, sprintf('worker %d opened exactly one DSN connection of its own (all: %s)', $n, json_encode($dsnConnections)));
        }
        $distinct = array_unique(array_merge($masterConnections, ...array_values($dsnConnections)));
        $this->assertCount(self::WORKERS + 2, $distinct, 'master (DSN + \Redis) and every worker on connections of their own');
        $this->assertCount(self::WORKERS + 2, array_unique($addresses), 'from distinct ports: '.json_encode($addresses));
        $this->assertGreaterThanOrEqual(self::WORKERS + 1, \count($addresses));

        foreach ($workers as $worker) {
            $worker->send('go');
        }
        $reports = [];
        foreach ($workers as $n => $worker) {
            $done = $worker->receive(600.0);
            $this->assertStringStartsWith('done ', $done);
            $reports[$n] = json_decode(substr($done, 5), true, 512, JSON_THROW_ON_ERROR);
        }
        $this->assertSame(
            $dsnConnections,
            $this->workerDsnConnections($inspector, $workers, $masterConnections, $inspectorId, $ownClientIds),
            'every worker used its one DSN connection to the end'
        );
        foreach ($workers as $worker) {
            $worker->send('exit');
        }
        foreach ($workers as $worker) {
            $worker->wait(60.0); // fails unless the worker exited with 0
        }

        // Counters: exact, and the fencing tokens written with them increased in file order (checked by the writers).
        $expected = array_fill_keys(self::COUNTERS, 0);
        $operationsDone = 0;
        $totals = [];
        foreach ($reports as $n => $report) {
            foreach (self::COUNTERS as $counter) {
                $expected[$counter] += $report['increments'][$counter];
            }
            $operationsDone += $report['operations'];
            $this->assertSame($operations, $report['operations'], "worker $n ran every operation");
            $this->assertSame(
                array_fill_keys(array_keys($report['metricsAtStart']), 0),
                $report['metricsAtStart'],
                "worker $n: Deadbolt\\Metrics started at zero after the fork"
            );
            $this->assertSame($report['expected'], $report['metrics'], "worker $n: Deadbolt\\Metrics counted exactly the operations done");
            $this->assertSame($report['expectedWaits'], $report['waitCount'], "worker $n: one wait_seconds observation per acquire call");
            $this->assertSame($report['expected']['released'], $report['holdCount'], "worker $n: one hold_seconds observation per release");
            foreach ($report['expected'] as $name => $value) {
                $totals[$name] = ($totals[$name] ?? 0) + $value;
            }
        }
        foreach (self::COUNTERS as $counter) {
            [$value] = explode(' ', (string) file_get_contents("$dir/$counter"));
            $this->assertSame((string) $expected[$counter], $value, "$counter: every increment under the lock counted once");
        }

        // The master: its metrics untouched by the workers, its locks still its own.
        $this->assertSame($masterMetrics, Metrics::snapshot(), 'the workers\' operations did not count in the master');
        $this->assertNotFalse($inspector->zScore($prefix.'master-dsn', $masterDsnToken), 'the master\'s DSN lock token is still in Redis');
        $this->assertNotFalse($inspector->zScore($prefix.'master-client', $masterClientToken), 'the master\'s \Redis-store token is still in Redis');
        $this->assertTrue($masterDsnLock->isAcquired());
        $this->assertTrue($masterClientLock->isAcquired());
        $this->assertTrue($masterFlockLock->isAcquired());
        $this->assertFalse(PhpProcess::canAcquire($lockDir, $prefix.'master-flock'), 'a fresh process cannot take the master\'s flock lock');
        $masterDsnLock->refresh();
        $masterClientLock->refresh();
        $this->assertSame(
            $masterConnections,
            array_values(array_diff(SharedRedis::clientIdsOfProcess($inspector, posix_getpid(), SharedRedis::port(), self::DB), [$inspectorId])),
            'the master still works on its own two connections'
        );
        $masterDsnLock->release();
        $masterClientLock->release();
        $masterFlockLock->release();
        $this->assertSame(0, $inspector->exists($prefix.'master-dsn', $prefix.'master-client'));

        $summary = sprintf(
            'worker model: %d workers x %d operations = %d; counters %s; metrics totals %s',
            self::WORKERS,
            $operations,
            $operationsDone,
            json_encode($expected),
            json_encode($totals)
        );
        $report = getenv('DEADBOLT_REPORT');
        if (\is_string($report) && '' !== $report) {
            file_put_contents($report, $summary."\n", FILE_APPEND);
        }
        $inspector->close();
        $masterRedis->close();
    }

    /**
     * One worker: its own \Redis connection (onWorkerStart), then $operations lock operations of every kind on its
     * own and shared resources through the three stores, counting what the metrics must say.
     *
     * @param list<Lock> $inherited the master's held locks
     */
    private function runWorker(Channel $master, int $n, int $operations, string $dir, string $prefix, LockFactory $flockFactory, LockFactory $dsnFactory, array $inherited): void
    {
        $metricsAtStart = Metrics::snapshot();
        foreach ($inherited as $lock) {
            $this->assertFalse($lock->isAcquired(), 'a lock inherited from the master is not held in the worker');
        }
        $redis = SharedRedis::newPhpRedis();
        $redis->select(self::DB);
        $clientFactory = new LockFactory(new RedisStore($redis));
        $factories = ['flock' => $flockFactory, 'dsn' => $dsnFactory, 'client' => $clientFactory];

        $expected = array_fill_keys(array_keys($metricsAtStart['counters']), 0);
        $waits = 0;
        $increments = array_fill_keys(self::COUNTERS, 0);

        $first = $dsnFactory->createLock($prefix."w$n-first", 30.0);
        $this->assertTrue($first->acquire(), 'the worker takes a lock through the inherited DSN store');
        ++$waits;
        ++$expected['acquired'];
        $first->release();
        ++$expected['released'];
        $master->send('ready '.(int) $redis->rawCommand('CLIENT', 'ID'));
        $this->assertSame('go', $master->receive(60.0));

        mt_srand(4242 + $n);
        $names = array_keys($factories);
        for ($i = 0; $i < $operations; ++$i) {
            $storeName = $names[mt_rand(0, 2)];
            $factory = $factories[$storeName];
            $roll = mt_rand(0, 99);
            if ($roll < 30) {
                // A counter file incremented under its lock; the Redis counter's lock is taken through the DSN store
                // or the \Redis store, which exclude each other (same data model).
                $counter = 'flock' === $storeName ? 'counter-flock' : 'counter-redis';
                $lock = $factory->createLock($prefix.$counter, 30.0);
                ++$waits;
                if (!$lock->acquire(true, 1.0)) {
                    ++$expected['timeouts'];
                    continue;
                }
                ++$expected['acquired'];
                $fence = $lock->getFencingToken();
                $this->assertIsInt($fence, 'an exclusive hold has a fencing token');
                [$value, $lastFence] = array_map('intval', explode(' ', (string) file_get_contents("$dir/$counter")));
                $this->assertGreaterThan($lastFence, $fence, "$counter: the fencing token grows with every hold ($storeName)");
                file_put_contents("$dir/$counter", ($value + 1).' '.$fence);
                ++$increments[$counter];
                $lock->release();
                ++$expected['released'];
            } elseif ($roll < 50) {
                // A resource of this worker's own: always free.
                $lock = $factory->createLock($prefix."w$n-own-".($i % 4), 30.0);
                ++$waits;
                $this->assertTrue($lock->acquire(false), "worker $n: its own resource is free ($storeName)");
                ++$expected['acquired'];
                $this->assertIsInt($lock->getFencingToken());
                $lock->refresh();
                ++$expected['refresh_ok'];
                $lock->release();
                ++$expected['released'];
                $this->assertFalse($lock->isAcquired());
            } elseif ($roll < 70) {
                // Shared read lock on a resource that others also write.
                $lock = $factory->createLock($prefix.'shared-rw', 30.0);
                ++$waits;
                if ($lock->acquireRead(false)) {
                    ++$expected['acquired'];
                    $this->assertNull($lock->getFencingToken(), 'a read lock has no fencing token');
                    $lock->release();
                    ++$expected['released'];
                } else {
                    ++$expected['conflicts'];
                }
            } elseif ($roll < 85) {
                // Non-blocking write attempt on the shared resource.
                $lock = $factory->createLock($prefix.'shared-rw', 30.0);
                ++$waits;
                if ($lock->acquire(false)) {
                    ++$expected['acquired'];
                    $this->assertIsInt($lock->getFencingToken());
                    $lock->refresh(20.0);
                    ++$expected['refresh_ok'];
                    $lock->release();
                    ++$expected['released'];
                } else {
                    ++$expected['conflicts'];
                }
            } else {
                // Blocking write with a deadline on the shared resource.
                $lock = $factory->createLock($prefix.'shared-rw', 30.0);
                ++$waits;
                if ($lock->acquire(true, 1.0)) {
                    ++$expected['acquired'];
                    $lock->release();
                    ++$expected['released'];
                } else {
                    ++$expected['timeouts'];
                }
            }
        }

        $snapshot = Metrics::snapshot();
        $metrics = $snapshot['counters'];
        // How waits woke (wakeups, polls) depends on timing: reported, not predicted.
        foreach (['wakeups', 'polls'] as $free) {
            $expected[$free] = $metrics[$free];
        }
        $master->send('done '.json_encode([
            'operations' => $operations,
            'increments' => $increments,
            'metricsAtStart' => $metricsAtStart['counters'] + ['wait_count' => $metricsAtStart['timings']['wait_seconds']['count'], 'hold_count' => $metricsAtStart['timings']['hold_seconds']['count']],
            'metrics' => $metrics,
            'expected' => $expected,
            'expectedWaits' => $waits,
            'waitCount' => $snapshot['timings']['wait_seconds']['count'],
            'holdCount' => $snapshot['timings']['hold_seconds']['count'],
        ], JSON_THROW_ON_ERROR));
        $this->assertSame('exit', $master->receive(120.0));
        $redis->close();
        // Leaving: exit() destroys this worker's copies of the master's factories, stores and held locks.
    }

    /**
     * The DSN connections each worker opened itself: its sockets to the DSN's database, minus those inherited from the
     * master (still open in the worker) and minus its own \Redis object's connection.
     *
     * @param array<int, \Deadbolt\Tests\Support\ForkedChild> $workers
     * @param list<int>                                        $masterConnections
     * @param array<int, int>                                  $ownClientIds
     *
     * @return array<int, list<int>>
     */
    private function workerDsnConnections(\Redis $inspector, array $workers, array $masterConnections, int $inspectorId, array $ownClientIds): array
    {
        $connections = [];
        foreach ($workers as $n => $worker) {
            $ids = SharedRedis::clientIdsOfProcess($inspector, $worker->pid, SharedRedis::port(), self::DB);
            $this->assertContains($ownClientIds[$n], $ids, "worker $n's own \\Redis connection is found through /proc");
            $connections[$n] = array_values(array_diff($ids, $masterConnections, [$inspectorId, $ownClientIds[$n]]));
        }

        return $connections;
    }

    /**
     * @param list<int> $ids
     *
     * @return list<string> the CLIENT LIST addr of each id
     */
    private function addressesOf(\Redis $inspector, array $ids): array
    {
        $addresses = [];
        foreach ($inspector->client('list') as $client) {
            if (\in_array((int) $client['id'], $ids, true)) {
                $addresses[] = (string) $client['addr'];
            }
        }

        return $addresses;
    }
}
