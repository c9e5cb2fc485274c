<?php

/*
 * One run of bench/contention.php: P forked processes (WorkerPool), one variant, ONE resource. Each process takes
 * a warm-up lock on a name of its own, waits for the barrier, then runs its critical sections: createLock(resource,
 * LOCK_TTL) + acquire(true) + read/increment/write the counter file + release(), then sleeps `think` µs. Every
 * section records hrtime(true) (CLOCK_MONOTONIC, comparable across processes) before acquire, when acquire returned,
 * before release and when release returned, and the counter value it read (its place in the global order).
 */

declare(strict_types=1);

require_once __DIR__ . '/environment.php';
require_once __DIR__ . '/report.php';
require_once __DIR__ . '/resp.php';
require_once __DIR__ . '/worker_pool.php';

/** TTL of every lock, seconds (as in bench/redis.php). */
const LOCK_TTL = 30.0;
/** A run whose processes have not all ended after this long is killed and reported as failed. */
const RUN_TIMEOUT_S = 120;

/**
 * A variant: 'factory' (called in the child after fork(), returns an object with createLock(string, float)),
 * 'sections' per process, 'seconds' (stop starting sections after this long, or null), 'redis' (its commands are
 * counted), 'metered' (Deadbolt\Metrics snapshots around each section).
 *
 * @return array{procs: int, planned: int, capped: ?int, start: int, records: list<array>, counter: int,
 *   metrics: array<string, int>, calls: ?array<string, int>, errors: list<string>, failed: int, redis: bool,
 *   metered: bool}
 */
function runContention(WorkerPool $pool, string $name, array $variant, int $procs, string $workDir, string $prefix,
    ?int $port, int $think): array
{
    $slug = strtolower(preg_replace('/[^A-Za-z]+/', '-', $name));
    $resource = "{$prefix}contention:$slug:$procs";
    $counter = "$workDir/counter-$slug-$procs";
    file_put_contents($counter, '0');
    // The parent's measuring connections are opened once the children are forked, and closed at once.
    $counted = $variant['redis'];
    $resetStats = static function () use ($port, &$counted): void {
        try {
            $stats = new Resp(REDIS_HOST, $port);
            $stats->call('CONFIG', 'RESETSTAT');
            $stats->close();
        } catch (RuntimeException) {
            $counted = false; // no counts rather than counts since the server started
        }
    };
    $run = $pool->run(
        $procs,
        "$workDir/result-$slug-$procs",
        static fn (int $w, Closure $barrier): array
            => contentionWorker($variant, $resource, $counter, $w, $think, $barrier),
        $counted ? $resetStats : null,
    );
    $calls = null;
    if ($counted) {
        $stats = new Resp(REDIS_HOST, $port);
        $calls = array_map(static fn (array $s): int => $s[0], $stats->commandStats());
        $stats->close();
    }

    $records = [];
    $metrics = [];
    $errors = [];
    $failed = 0;
    foreach ($run['results'] as $w => $result) {
        if ($result === null) {
            $errors[] = "process $w left no result" . ($run['killed'] ? ' (killed after ' . RUN_TIMEOUT_S . ' s)' : '');
            continue;
        }
        if ($result['error'] !== null) {
            $errors[] = "process $w: {$result['error']}";
        }
        $failed += $result['failed'];
        foreach ($result['records'] as [$seen, $requested, $acquired, $releasing, $released, $wakeups, $polls]) {
            $records[] = ['w' => $w, 'seq' => $seen, 'req' => $requested, 'acq' => $acquired, 'call' => $releasing,
                'rel' => $released, 'wakeups' => $wakeups, 'polls' => $polls];
        }
        foreach ($result['metrics'] ?? [] as $counterName => $value) {
            $metrics[$counterName] = ($metrics[$counterName] ?? 0) + $value;
        }
    }

    return [
        'procs' => $procs,
        'planned' => $procs * $variant['sections'],
        'capped' => $variant['seconds'],
        'start' => $run['start'],
        'records' => $records,
        'counter' => (int) file_get_contents($counter),
        'metrics' => $metrics,
        'calls' => $calls,
        'errors' => $errors,
        'failed' => $failed,
        'redis' => $variant['redis'],
        'metered' => $variant['metered'],
    ];
}

/** The child's side: set up, pass the barrier, run the sections; returns its records (or the error). */
function contentionWorker(array $variant, string $resource, string $counter, int $worker, int $think,
    Closure $barrier): array
{
    $result = ['records' => [], 'metrics' => null, 'error' => null, 'failed' => 0];
    try {
        $factory = $variant['factory']();
        // Warm-up on a name of its own: connection, scripts, symfony/lock's TIME probe.
        $lock = $factory->createLock("$resource:warmup:$worker", LOCK_TTL);
        $lock->acquire(true);
        $lock->release();
        unset($lock);
        if (class_exists(Deadbolt\Metrics::class)) {
            Deadbolt\Metrics::reset();
        }
        $barrier();
        $deadline = $variant['seconds'] === null ? null : hrtime(true) + $variant['seconds'] * 1_000_000_000;
        // Deadbolt's own count of how each wait woke up, per acquire (two snapshots of ~4 µs, outside the timings).
        $metered = $variant['metered'] && class_exists(Deadbolt\Metrics::class);
        $records = [];
        for ($i = 0; $i < $variant['sections']; ++$i) {
            if ($deadline !== null && hrtime(true) >= $deadline) {
                break;
            }
            $before = $metered ? Deadbolt\Metrics::snapshot()['counters'] : null;
            $lock = $factory->createLock($resource, LOCK_TTL);
            $requested = hrtime(true);
            if (!$lock->acquire(true)) {
                ++$result['failed'];
                continue;
            }
            $acquired = hrtime(true);
            $seen = (int) file_get_contents($counter);
            file_put_contents($counter, (string) ($seen + 1));
            $releasing = hrtime(true);
            $lock->release();
            $released = hrtime(true);
            $after = $metered ? Deadbolt\Metrics::snapshot()['counters'] : null;
            $records[] = [$seen, $requested, $acquired, $releasing, $released,
                $metered ? $after['wakeups'] - $before['wakeups'] : null,
                $metered ? $after['polls'] - $before['polls'] : null];
            if ($think > 0) {
                usleep($think);
            }
        }
        $result['records'] = $records;
        if (class_exists(Deadbolt\Metrics::class)) {
            $result['metrics'] = Deadbolt\Metrics::snapshot()['counters'];
        }
    } catch (Throwable $e) {
        $result['error'] = describe($e);
    }

    return $result;
}
