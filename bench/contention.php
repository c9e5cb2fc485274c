<?php

/*
 * Hand-off under contention: P processes take turns on ONE lock with a blocking acquire(true).
 *
 *   bash scripts/redis-start.sh /tmp/deadbolt-bench-redis     # prints PORT (stop: scripts/redis-stop.sh DIR)
 *   php -d extension=target/release/libdeadbolt.so bench/contention.php --port=PORT [--procs=1,4,8,16]
 *       [--sections=1000] [--symfony-sections=1000] [--symfony-seconds=5] [--think=0] [--png=PATH | --no-png]
 *
 * The port may also come from the environment (DEADBOLT_REDIS_PORT). Without a port only the flock variant runs.
 *
 * Variants, run one after the other for each P (the order rotates from P to P):
 *   symfony/lock Redis   symfony/lock 5.4 LockFactory + RedisStore over phpredis; it has no blocking store, so
 *                        acquire(true) retries every 90-110 ms
 *   Deadbolt Redis       Deadbolt\LockFactory + Deadbolt\Store\RedisStore('redis://127.0.0.1:PORT'); a release
 *                        hands the lock over to the longest waiter, whose BLPOP returns holding it
 *   Deadbolt flock       Deadbolt\LockFactory + Deadbolt\Store\FlockStore: flock(2) itself blocks (one host only)
 *
 * One run = P processes forked with pcntl_fork, each connects and takes one warm-up lock on a name of its own, then
 * all of them are released together by a barrier (a socket pair whose parent end the parent closes) and each does
 * `sections` critical sections on ONE resource: createLock(resource, 30) + acquire(true) + read/increment/write a
 * counter file + release(), then sleeps `think` µs (0 by default: every process asks again at once, the hardest
 * case). The symfony/lock processes also stop starting new sections after `symfony-seconds`.
 * Every section records hrtime(true) (CLOCK_MONOTONIC, comparable across processes) before acquire, when acquire
 * returned, before release and when release returned, and the counter value it read (its place in the global order).
 *
 * Per variant and P the tables give: throughput, wait per acquire (median / p99 / max), hand-off latency (from the
 * return of the previous holder's release() to the acquire of a process that was already waiting for it), how often
 * the lock changed hands, the counter check; then diagnostics: how the waits woke up (Deadbolt\Metrics, also per
 * acquire), how often a waiter was overtaken, and the Redis commands per section (INFO commandstats). The raw records go to one CSV file per variant, in a directory printed at the end (kept).
 * With python3 + matplotlib (CONTENTION_PYTHON names another interpreter) it draws bench/contention.png: the CDF of
 * the waits per acquire of every variant at P=8 (or the largest P run), log x axis.
 *
 * Env: DEADBOLT_REDIS_PORT, SYMFONY_LOCK_AUTOLOAD (library path), CONTENTION_PYTHON (interpreter with matplotlib).
 */

declare(strict_types=1);

const SYMFONY_AUTOLOAD = '/usr/share/php/Symfony/Component/Lock/autoload.php';
const HOST = '127.0.0.1';
const USAGE = 'usage: php bench/contention.php [--port=PORT] [--procs=1,4,8,16] [--sections=1000]'
    . ' [--symfony-sections=1000] [--symfony-seconds=5] [--think=0] [--png=PATH | --no-png]';
/** TTL of every lock, seconds (as in bench/redis.php). */
const LOCK_TTL = 30.0;
/** A run whose processes have not all ended after this long is killed and reported as failed. */
const RUN_TIMEOUT_S = 120;
/** The P whose numbers are checked against the targets and drawn. */
const TARGET_P = 8;

const SYMFONY = 'symfony/lock Redis';
const DEADBOLT_REDIS = 'Deadbolt Redis';
const DEADBOLT_FLOCK = 'Deadbolt flock';

function usage(string $error): never
{
    fwrite(STDERR, "bench/contention.php: $error\n" . USAGE . "\n");
    exit(2);
}

function positive(string $value, string $name): int
{
    if (!ctype_digit($value) || (int) $value < 1) {
        usage("$name must be a positive integer, got '$value'");
    }

    return (int) $value;
}

function removeTree(string $dir): void
{
    if (!is_dir($dir)) {
        return;
    }
    foreach (new RecursiveIteratorIterator(
        new RecursiveDirectoryIterator($dir, FilesystemIterator::SKIP_DOTS),
        RecursiveIteratorIterator::CHILD_FIRST,
    ) as $entry) {
        $entry->isDir() ? rmdir($entry->getPathname()) : unlink($entry->getPathname());
    }
    rmdir($dir);
}

/** Nearest-rank percentile of a sorted list ($p in 0..1). */
function percentile(array $sorted, float $p): float
{
    return $sorted[max(0, (int) ceil($p * count($sorted)) - 1)];
}

/** One table row; widths count characters, not bytes (µ is two bytes in UTF-8). */
function row(array $widths, string ...$cells): void
{
    $out = [];
    foreach ($cells as $i => $cell) {
        $pad = str_repeat(' ', max(0, $widths[$i] - preg_match_all('/[^\x80-\xBF]/', $cell)));
        $out[] = $i === 0 ? $cell . $pad : $pad . $cell;
    }
    echo rtrim(implode('  ', $out)), "\n";
}

function rule(array $widths): void
{
    row($widths, ...array_map(static fn (int $w): string => str_repeat('-', $w), $widths));
}

function ms(?float $ns, int $decimals = 2): string
{
    return $ns === null ? '-' : sprintf("%.{$decimals}f", $ns / 1e6);
}

/** A fresh phpredis connection for the parent's own measuring commands (never open while forking). */
function statsConnection(int $port): ?Redis
{
    if (!class_exists(Redis::class)) {
        return null;
    }
    $redis = new Redis();
    $redis->connect(HOST, $port, 2.0);

    return $redis;
}

/** Calls per command name from INFO commandstats, without the parent's own measuring commands. */
function commandCalls(Redis $redis): array
{
    $calls = [];
    foreach ($redis->info('commandstats') as $name => $value) {
        if (!str_starts_with($name, 'cmdstat_') || preg_match('/calls=(\d+)/', (string) $value, $m) !== 1) {
            continue;
        }
        $command = substr($name, 8);
        if ($command === 'info' || str_starts_with($command, 'config')) {
            continue;
        }
        $calls[$command] = (int) $m[1];
    }
    arsort($calls);

    return $calls;
}

// ---------------------------------------------------------------------------------------------------------------------
// Arguments and variants

$port = getenv('DEADBOLT_REDIS_PORT') ?: null;
$procsList = [1, 4, 8, 16];
$sections = 1000;
$symfonySections = 1000;
$symfonySeconds = 5;
$think = 0;
$pngPath = __DIR__ . '/contention.png';
foreach (array_slice($argv, 1) as $arg) {
    [$option, $value] = array_pad(explode('=', $arg, 2), 2, null);
    match ($option) {
        '--port' => $port = $value ?? '',
        '--procs' => $procsList = array_map(static fn (string $p): int => positive($p, '--procs'), explode(',', $value ?? '')),
        '--sections' => $sections = positive($value ?? '', '--sections'),
        '--symfony-sections' => $symfonySections = positive($value ?? '', '--symfony-sections'),
        '--symfony-seconds' => $symfonySeconds = positive($value ?? '', '--symfony-seconds'),
        '--think' => $think = $value === '0' ? 0 : positive($value ?? '', '--think'),
        '--png' => $pngPath = $value !== null && $value !== '' ? $value : usage('--png needs a path'),
        '--no-png' => $pngPath = null,
        default => usage("unknown argument '$arg'"),
    };
}
if ($port !== null) {
    $port = positive((string) $port, 'the port');
}
foreach (['pcntl_fork', 'posix_getpid'] as $function) {
    if (!function_exists($function)) {
        usage("needs PHP's pcntl and posix extensions ($function is missing)");
    }
}

$notes = [];
$runId = bin2hex(random_bytes(4));
$parentPid = getmypid();
$baseDir = sys_get_temp_dir() . "/deadbolt-contention-$runId";
$workDir = "$baseDir/work";
if (!mkdir($workDir, 0700, true)) {
    usage("cannot create $workDir");
}
/** Pids of the processes of the run under way, killed if the parent ends early. */
$GLOBALS['children'] = [];
// Children exit through exit() too: only the parent cleans up.
register_shutdown_function(static function () use ($workDir, $baseDir, $parentPid): void {
    if (getmypid() === $parentPid) {
        foreach ($GLOBALS['children'] as $pid) {
            posix_kill($pid, SIGKILL);
            pcntl_waitpid($pid, $status);
        }
        removeTree($workDir);
        @rmdir($baseDir); // only when no CSV was written
    }
});

/*
 * Each variant: a closure, called in the child after fork(), that returns a lock factory (an object with
 * createLock(string $resource, float $ttl)), and the per-process cap of its runs.
 */
$variants = [];
$symfonyAutoload = getenv('SYMFONY_LOCK_AUTOLOAD') ?: SYMFONY_AUTOLOAD;
$deadboltLoaded = class_exists(Deadbolt\LockFactory::class);
if ($port === null) {
    $notes[] = 'No Redis port (--port=PORT or DEADBOLT_REDIS_PORT): the two Redis variants were not run.';
} else {
    if (!class_exists(Redis::class)) {
        $notes[] = 'phpredis is not loaded: the symfony/lock variant was not run.';
    } elseif (!is_file($symfonyAutoload)) {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its variant was not run.';
    } else {
        require_once $symfonyAutoload;
        $variants[SYMFONY] = [
            'factory' => static function () use ($port): object {
                $redis = new Redis();
                $redis->connect(HOST, $port, 2.0);

                return new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($redis));
            },
            'sections' => $symfonySections,
            'seconds' => $symfonySeconds,
            'redis' => true,
            'metered' => false,
        ];
    }
    if ($deadboltLoaded) {
        $variants[DEADBOLT_REDIS] = [
            'factory' => static fn (): object => new Deadbolt\LockFactory(
                new Deadbolt\Store\RedisStore(sprintf('redis://%s:%d', HOST, $port)),
            ),
            'sections' => $sections,
            'seconds' => null,
            'redis' => true,
            'metered' => true,
        ];
    }
}
if ($deadboltLoaded) {
    $variants[DEADBOLT_FLOCK] = [
        'factory' => static fn (): object => new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore("$workDir/locks")),
        'sections' => $sections,
        'seconds' => null,
        'redis' => false,
        'metered' => true,
    ];
} else {
    $notes[] = 'The deadbolt extension is not loaded: only symfony/lock was measured. Run'
        . ' php -d extension=target/release/libdeadbolt.so bench/contention.php --port=PORT';
}
if ($variants === []) {
    usage('nothing to run (no extension and no Redis port)');
}

// ---------------------------------------------------------------------------------------------------------------------
// One run: P processes, one variant

/**
 * The child's side: set up, report ready, wait for the barrier, run the sections, write the records. Never returns.
 *
 * @param resource $ready child's end of the ready pair
 * @param resource $go    child's end of the barrier pair
 */
function worker(array $variant, string $resource, string $counter, string $resultFile, $ready, $go, int $worker,
    int $think): never
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
        fwrite($ready, 'R');
        while (fread($go, 1) !== '') {
            // The parent never writes: end of file is the signal.
        }
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
                $metered ? $after['wakeups'] - $before['wakeups'] : null, $metered ? $after['polls'] - $before['polls'] : null];
            if ($think > 0) {
                usleep($think);
            }
        }
        $result['records'] = $records;
        if (class_exists(Deadbolt\Metrics::class)) {
            $result['metrics'] = Deadbolt\Metrics::snapshot()['counters'];
        }
    } catch (Throwable $e) {
        $chain = [];
        for ($t = $e; $t !== null; $t = $t->getPrevious()) {
            $chain[] = get_class($t) . ': ' . $t->getMessage();
        }
        $result['error'] = implode(' <- ', $chain);
        fwrite($ready, 'R'); // never leave the parent waiting for a ready byte
    }
    file_put_contents($resultFile, serialize($result));
    exit($result['error'] === null ? 0 : 1);
}

/** Runs one variant with P processes and returns its raw results. */
function runOnce(string $name, array $variant, int $procs, string $workDir, string $runId, ?int $port, int $think): array
{
    $slug = strtolower(preg_replace('/[^A-Za-z]+/', '-', $name));
    $resource = "deadbolt-bench:$runId:contention:$slug:$procs";
    $counter = "$workDir/counter-$slug-$procs";
    file_put_contents($counter, '0');
    $ready = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $go = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
    $pids = [];
    for ($w = 0; $w < $procs; ++$w) {
        $pid = pcntl_fork();
        if ($pid === -1) {
            fwrite(STDERR, "bench/contention.php: fork failed\n");
            exit(1);
        }
        if ($pid === 0) {
            fclose($ready[0]);
            fclose($go[0]);
            worker($variant, $resource, $counter, "$workDir/result-$slug-$procs-$w", $ready[1], $go[1], $w, $think);
        }
        $pids[$w] = $pid;
        $GLOBALS['children'][$w] = $pid;
    }
    fclose($ready[1]);
    fclose($go[1]);
    stream_set_timeout($ready[0], RUN_TIMEOUT_S);
    $got = 0;
    while ($got < $procs) {
        $bytes = fread($ready[0], $procs - $got);
        if ($bytes === '' || $bytes === false) {
            break; // every child has gone: the results say why
        }
        $got += strlen($bytes);
    }
    $calls = null;
    if ($variant['redis'] && ($stats = statsConnection($port)) !== null) {
        $stats->rawCommand('CONFIG', 'RESETSTAT');
        $stats->close();
    }
    $start = hrtime(true);
    fclose($go[0]); // the barrier: every child reads end of file at once
    $deadline = $start + RUN_TIMEOUT_S * 1_000_000_000;
    $killed = false;
    while ($pids !== []) {
        foreach ($pids as $w => $pid) {
            if (pcntl_waitpid($pid, $status, WNOHANG) !== 0) {
                unset($pids[$w], $GLOBALS['children'][$w]);
            }
        }
        if ($pids !== [] && hrtime(true) > $deadline) {
            foreach ($pids as $pid) {
                posix_kill($pid, SIGKILL);
            }
            $killed = true;
        }
        usleep(20_000);
    }
    fclose($ready[0]);
    if ($variant['redis'] && ($stats = statsConnection($port)) !== null) {
        $calls = commandCalls($stats);
        $stats->close();
    }

    $records = [];
    $metrics = [];
    $errors = [];
    $failed = 0;
    for ($w = 0; $w < $procs; ++$w) {
        $file = "$workDir/result-$slug-$procs-$w";
        $result = is_file($file) ? unserialize((string) file_get_contents($file)) : null;
        if (!is_array($result)) {
            $errors[] = "process $w left no result" . ($killed ? ' (killed after ' . RUN_TIMEOUT_S . ' s)' : '');
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
        'start' => $start,
        'records' => $records,
        'counter' => (int) file_get_contents($counter),
        'metrics' => $metrics,
        'calls' => $calls,
        'errors' => $errors,
        'failed' => $failed,
    ];
}

/** Statistics of one run, in ns. Hand-off: see the header comment and bench/README.md. */
function analyse(array $run): array
{
    $records = $run['records'];
    $n = count($records);
    $stats = ['n' => $n, 'ok' => false, 'throughput' => null, 'wait' => null, 'handoff' => null, 'switches' => 0,
        'handoffs' => [], 'negative' => 0, 'fromCall' => null, 'overtaken' => null, 'rewoken' => null,
        'maxWakeups' => null];
    if ($n === 0) {
        return $stats;
    }
    usort($records, static fn (array $a, array $b): int => $a['seq'] <=> $b['seq']);
    // Mutual exclusion held iff the counter values read are exactly 0..n-1 and the file says n.
    $stats['ok'] = $run['counter'] === $n && array_column($records, 'seq') === range(0, $n - 1)
        && $run['errors'] === [] && $run['failed'] === 0;
    $end = max(array_column($records, 'rel'));
    $stats['throughput'] = $n / (($end - $run['start']) / 1e9);
    $waits = array_map(static fn (array $r): int => $r['acq'] - $r['req'], $records);
    sort($waits);
    $stats['waits'] = $waits;
    $stats['wait'] = [percentile($waits, 0.5), percentile($waits, 0.99), $waits[$n - 1]];
    $handoffs = [];
    $fromCall = [];
    for ($k = 1; $k < $n; ++$k) {
        $previous = $records[$k - 1];
        $current = $records[$k];
        if ($previous['w'] === $current['w']) {
            continue;
        }
        ++$stats['switches'];
        if ($current['req'] < $previous['rel']) {
            $handoffs[$k] = $current['acq'] - $previous['rel'];
            $fromCall[] = $current['acq'] - $previous['call'];
        }
    }
    $stats['handoffs'] = $handoffs;
    // Overtaken: how many sections began (acquire returned) while this acquire was waiting. A first-come,
    // first-served lock keeps this under P.
    $overtaken = [];
    for ($k = 0; $k < $n; ++$k) {
        $count = 0;
        for ($j = $k - 1; $j >= 0 && $records[$j]['acq'] > $records[$k]['req']; --$j) {
            ++$count;
        }
        $overtaken[] = $count;
    }
    sort($overtaken);
    $stats['overtaken'] = [percentile($overtaken, 0.99), $overtaken[$n - 1]];
    if ($records[0]['wakeups'] !== null) {
        $wakeups = array_column($records, 'wakeups');
        $stats['rewoken'] = count(array_filter($wakeups, static fn (int $x): bool => $x >= 2));
        $stats['maxWakeups'] = max($wakeups);
    }
    if ($handoffs !== []) {
        $sorted = array_values($handoffs);
        sort($sorted);
        $stats['handoff'] = [percentile($sorted, 0.5), percentile($sorted, 0.99)];
        $stats['negative'] = count(array_filter($sorted, static fn (int $h): bool => $h < 0));
        sort($fromCall);
        $stats['fromCall'] = [percentile($fromCall, 0.5), percentile($fromCall, 0.99)];
    }
    $stats['sorted'] = $records;

    return $stats;
}

// ---------------------------------------------------------------------------------------------------------------------
// Run everything

$names = array_keys($variants);
$results = [];
foreach ($procsList as $round => $procs) {
    $rotated = array_merge(array_slice($names, $round % count($names)), array_slice($names, 0, $round % count($names)));
    foreach ($rotated as $name) {
        fprintf(STDERR, "  running %s, P=%d ...\n", $name, $procs);
        $run = runOnce($name, $variants[$name], $procs, $workDir, $runId, $port, $think);
        $results[$procs][$name] = $run + ['stats' => analyse($run)];
    }
    // Tables and picture list the variants in one order, whatever order they ran in.
    $results[$procs] = array_merge(array_flip($names), $results[$procs]);
}

// Keys left in Redis: the resources should be gone after release; the fencing counters and wake-up lists are ours.
if ($port !== null && ($stats = statsConnection($port)) !== null) {
    $left = [];
    foreach (["deadbolt-bench:$runId:*", "deadbolt:*{deadbolt-bench:$runId:*"] as $pattern) {
        $it = null;
        while (($keys = $stats->scan($it, $pattern, 1000)) !== false) {
            foreach ($keys as $key) {
                $left[] = $key;
            }
            if ($it === 0) {
                break;
            }
        }
    }
    $resources = array_filter($left, static fn (string $k): bool => str_starts_with($k, 'deadbolt-bench:'));
    if ($resources !== []) {
        $notes[] = sprintf('%d lock key(s) remained in Redis after the runs: %s', count($resources),
            implode(', ', array_slice($resources, 0, 5)));
    }
    if ($left !== []) {
        $stats->del($left);
    }
    $stats->close();
}

// ---------------------------------------------------------------------------------------------------------------------
// Report

printf("Hand-off under contention: P processes, one resource, createLock(resource, %g) + acquire(true) + counter"
    . " file read/increment/write + release()\n", LOCK_TTL);
printf("sections per process: %d (Deadbolt), %d capped at %d s (symfony/lock); think time between sections: %d µs\n"
    . "PHP %s, %s, %d CPUs%s\n\n",
    $sections, $symfonySections, $symfonySeconds, $think, PHP_VERSION, php_uname('s') . ' ' . php_uname('r'),
    (int) trim((string) @shell_exec('nproc')), $port === null ? '' : ", Redis on " . HOST . ":$port");

$main = [20, 11, 7, 10, 8, 8, 9, 9, 9, 9, 8];
foreach ($results as $procs => $runs) {
    echo "P=$procs\n";
    row($main, 'variant', 'sections', 'count', 'sect/s', 'wait ms', 'p99', 'max', 'hand-off', 'p99', 'n', 'switch');
    row($main, '', '', '', '', 'median', '', '', 'median', '', '', '');
    rule($main);
    foreach ($runs as $name => $run) {
        $s = $run['stats'];
        row(
            $main,
            $name,
            $run['capped'] === null ? (string) $s['n'] : sprintf('%d/%d', $s['n'], $run['planned']),
            $s['ok'] ? 'OK' : 'FAIL',
            $s['throughput'] === null ? '-' : sprintf('%.0f', $s['throughput']),
            ms($s['wait'][0] ?? null, 3),
            ms($s['wait'][1] ?? null),
            ms($s['wait'][2] ?? null),
            ms($s['handoff'][0] ?? null, 3),
            ms($s['handoff'][1] ?? null),
            (string) count($s['handoffs']),
            $s['n'] > 1 ? sprintf('%.0f%%', 100 * $s['switches'] / ($s['n'] - 1)) : '-',
        );
    }
    echo "\n";
}

// Why the waits were what they were: how they woke up, how often they were overtaken, the hand-off measured from
// the release() call, and what Redis executed.
$diag = [20, 3, 8, 6, 8, 5, 9, 5, 9, 8, 7, 6, 6, 30];
echo "Diagnostics (see bench/README.md)\n";
row($diag, 'variant', 'P', 'wakeups', 'polls', 'woken 2+', 'max', 'overtaken', 'max', 'from call', 'p99', 'neg', 'trips',
    'all', 'Redis commands sent, per section');
row($diag, '', '', '', '', 'acquires', 'woken', 'p99', '', 'median ms', '', 'h-o', '/sect', '/sect', '');
rule($diag);
foreach ($results as $procs => $runs) {
    foreach ($runs as $name => $run) {
        $st = $run['stats'];
        $n = max(1, $st['n']);
        $calls = $run['calls'] ?? [];
        $sent = array_intersect_key($calls, array_flip(['evalsha', 'eval', 'blpop']));
        $byName = [];
        foreach ($sent as $command => $count) {
            $byName[] = sprintf('%s %.2f', strtoupper($command), $count / $n);
        }
        // Metrics sees the waits of a Redis store only: a flock wait is flock(2) itself.
        $metered = $name === DEADBOLT_REDIS;
        row(
            $diag,
            $name,
            (string) $procs,
            $metered ? (string) ($run['metrics']['wakeups'] ?? '-') : '-',
            $metered ? (string) ($run['metrics']['polls'] ?? '-') : '-',
            $metered && $st['rewoken'] !== null ? (string) $st['rewoken'] : '-',
            $metered && $st['maxWakeups'] !== null ? (string) $st['maxWakeups'] : '-',
            $st['overtaken'] === null ? '-' : (string) $st['overtaken'][0],
            $st['overtaken'] === null ? '-' : (string) $st['overtaken'][1],
            ms($st['fromCall'][0] ?? null, 3),
            ms($st['fromCall'][1] ?? null),
            (string) $st['negative'],
            $run['calls'] === null ? '-' : sprintf('%.2f', array_sum($sent) / $n),
            $run['calls'] === null ? '-' : sprintf('%.1f', array_sum($calls) / $n),
            implode(', ', $byName),
        );
    }
}
echo "\n";

// Ratios Deadbolt Redis / symfony/lock, per P.
if (isset($variants[SYMFONY], $variants[DEADBOLT_REDIS])) {
    $ratio = [5, 22, 20, 20];
    echo "Deadbolt Redis vs symfony/lock Redis\n";
    row($ratio, 'P', 'throughput (x faster)', 'p99 wait (x lower)', 'max wait (x lower)');
    rule($ratio);
    foreach ($results as $procs => $runs) {
        $d = $runs[DEADBOLT_REDIS]['stats'];
        $s = $runs[SYMFONY]['stats'];
        $x = static fn (?float $num, ?float $den): string => $num === null || $den === null || $den <= 0
            ? '-' : sprintf($num / $den < 1 ? '%.2fx' : '%.1fx', $num / $den);
        row(
            $ratio,
            (string) $procs,
            $x($d['throughput'], $s['throughput']),
            $x($s['wait'][1] ?? null, $d['wait'][1] ?? null),
            $x($s['wait'][2] ?? null, $d['wait'][2] ?? null),
        );
    }
    echo "\n";
}

// The lead's targets, at P=8.
if (isset($results[TARGET_P][DEADBOLT_REDIS])) {
    $d = $results[TARGET_P][DEADBOLT_REDIS]['stats'];
    $s = $results[TARGET_P][SYMFONY]['stats'] ?? null;
    $verdict = static fn (bool $met): string => $met ? 'met' : 'MISSED';
    printf("Targets at P=%d (Deadbolt Redis)\n", TARGET_P);
    printf("  p99 wait < 5 ms:            %s ms  %s\n", ms($d['wait'][1]), $verdict($d['wait'][1] < 5e6));
    printf("  max wait < 20 ms:           %s ms  %s\n", ms($d['wait'][2]), $verdict($d['wait'][2] < 20e6));
    if ($s !== null && $s['throughput'] !== null) {
        $x = $d['throughput'] / $s['throughput'];
        printf("  >= 3x symfony throughput:   %.1fx  %s\n", $x, $verdict($x >= 3));
    }
    if ($d['handoff'] !== null) {
        printf("  median hand-off < 1 ms:     %s ms  %s\n", ms($d['handoff'][0], 3), $verdict($d['handoff'][0] < 1e6));
    } else {
        printf("  median hand-off < 1 ms:     no hand-off to a waiting process was seen  MISSED\n");
    }
    echo "\n";
}

// Raw records, one CSV per variant.
foreach ($names as $name) {
    $slug = strtolower(trim(preg_replace('/[^A-Za-z]+/', '-', $name), '-'));
    $csv = fopen("$baseDir/$slug.csv", 'w');
    fputcsv($csv, ['procs', 'process', 'seq', 'requested_us', 'wait_us', 'hold_us', 'release_us', 'handoff_us',
        'wakeups', 'polls']);
    foreach ($results as $procs => $runs) {
        $run = $runs[$name];
        foreach ($run['stats']['sorted'] ?? [] as $k => $r) {
            $handoff = $run['stats']['handoffs'][$k] ?? null;
            fputcsv($csv, [
                $procs, $r['w'], $r['seq'],
                sprintf('%.1f', ($r['req'] - $run['start']) / 1e3),
                sprintf('%.1f', ($r['acq'] - $r['req']) / 1e3),
                sprintf('%.1f', ($r['call'] - $r['acq']) / 1e3),
                sprintf('%.1f', ($r['rel'] - $r['call']) / 1e3),
                $handoff === null ? '' : sprintf('%.1f', $handoff / 1e3),
                $r['wakeups'] ?? '',
                $r['polls'] ?? '',
            ]);
        }
    }
    fclose($csv);
}

// The picture: CDF of the waits at P=8 (or the largest P run), drawn by matplotlib.
if ($pngPath !== null) {
    $drawP = isset($results[TARGET_P]) ? TARGET_P : max(array_keys($results));
    $python = getenv('CONTENTION_PYTHON') ?: 'python3';
    exec(escapeshellarg($python) . ' -c "import matplotlib" 2>/dev/null', $ignored, $status);
    if ($status !== 0) {
        $notes[] = "No picture: $python cannot import matplotlib (set CONTENTION_PYTHON to an interpreter that can,"
            . ' e.g. a venv: python3 -m venv /tmp/mpl && /tmp/mpl/bin/pip install matplotlib).';
    } else {
        $series = [];
        foreach ($results[$drawP] as $name => $run) {
            if (($run['stats']['waits'] ?? []) !== []) {
                $series[] = ['label' => $name, 'waits_ms' => array_map(static fn (int $w): float => $w / 1e6,
                    $run['stats']['waits'])];
            }
        }
        $plot = <<<'PY'
import json, sys
import matplotlib
matplotlib.use("Agg")
import matplotlib.pyplot as plt
data = json.load(sys.stdin)
fig, (cdf, tail) = plt.subplots(2, 1, figsize=(9, 8), dpi=110, sharex=True)
for s in data["series"]:
    w = sorted(max(x, 1e-3) for x in s["waits_ms"])
    n = len(w)
    p50, p99 = w[(n + 1) // 2 - 1], w[max(0, -(-99 * n // 100) - 1)]
    label = "%s  (n=%d, median %.3g ms, p99 %.3g ms, max %.3g ms)" % (s["label"], n, p50, p99, w[-1])
    line, = cdf.step(w, [(i + 1) / n for i in range(n)], where="post", label=label)
    # Share of acquires that waited longer than x: the tail, on a log scale.
    tail.step(w, [(n - i - 1) / n if i < n - 1 else 0.5 / n for i in range(n)], where="post", color=line.get_color())
cdf.set_xscale("log")
cdf.set_ylabel("fraction of acquires that waited <= x")
cdf.set_ylim(0, 1.01)
cdf.grid(True, which="both", alpha=0.3)
cdf.set_title(data["title"])
cdf.legend(loc="center left", fontsize=8)
tail.set_yscale("log")
tail.set_ylabel("fraction that waited > x (log)")
tail.set_xlabel("wait per acquire(true), ms (log scale)")
tail.grid(True, which="both", alpha=0.3)
fig.tight_layout()
fig.savefig(data["out"])
PY;
        $process = proc_open([$python, '-c', $plot], [0 => ['pipe', 'r'], 1 => STDOUT, 2 => ['pipe', 'w']], $pipes);
        fwrite($pipes[0], json_encode([
            'out' => $pngPath,
            'title' => "Wait per acquire(true), $drawP processes on one lock, think time $think µs (bench/contention.php)",
            'series' => $series,
        ]));
        fclose($pipes[0]);
        $stderr = stream_get_contents($pipes[2]);
        fclose($pipes[2]);
        if (proc_close($process) === 0) {
            echo "Picture (CDF of the waits at P=$drawP): $pngPath\n";
        } else {
            $notes[] = "No picture: matplotlib failed: " . trim($stderr);
        }
    }
}
echo "Raw records (one CSV per variant, kept): $baseDir\n";

foreach ($results as $procs => $runs) {
    foreach ($runs as $name => $run) {
        $s = $run['stats'];
        foreach ($run['errors'] as $error) {
            $notes[] = "$name, P=$procs: $error";
        }
        if (!$s['ok']) {
            $notes[] = sprintf('%s, P=%d: counter check FAILED: counter file says %d, %d sections recorded, %d'
                . ' acquire(true) returned false.', $name, $procs, $run['counter'], $s['n'], $run['failed']);
        }
    }
}
$negative = array_sum(array_map(
    static fn (array $runs): int => array_sum(array_map(static fn (array $r): int => $r['stats']['negative'], $runs)),
    $results,
));
if ($negative > 0) {
    $notes[] = "$negative hand-off(s) were negative (column `neg h-o`): the waiter's acquire returned before the"
        . ' releasing process got back from its release() call, which is possible since the wake-up and the reply to'
        . ' the release leave together; they are kept in the median and p99.';
}
foreach ($notes as $note) {
    echo "\nNOTE: $note\n";
}
