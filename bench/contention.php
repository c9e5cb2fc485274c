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
 *   Deadbolt deferred    Deadbolt Redis with ?release=deferred: release() does not wait for its reply
 *   Deadbolt flock       Deadbolt\LockFactory + Deadbolt\Store\FlockStore: flock(2) itself blocks (one host only)
 *
 * One run (support/contention_run.php) = P processes forked together (support/worker_pool.php), each connects and
 * takes one warm-up lock on a name of its own, then all of them pass a barrier and each does `sections` critical
 * sections on ONE resource: createLock(resource, 30) + acquire(true) + read/increment/write a counter file +
 * release(), then sleeps `think` µs (0 by default: every process asks again at once, the hardest case). The
 * symfony/lock processes also stop starting new sections after `symfony-seconds`.
 *
 * Per variant and P the tables give: throughput, wait per acquire (median / p99 / max), hand-off latency (from the
 * return of the previous holder's release() to the acquire of a process that was already waiting for it), how often
 * the lock changed hands, the counter check; then diagnostics: how the waits woke up (Deadbolt\Metrics, also per
 * acquire), how often a waiter was overtaken, and the Redis commands per section (INFO commandstats); then Deadbolt
 * Redis against symfony/lock and the targets at P=8. The raw records go to one CSV file per variant in
 * target/bench/contention-<run>/ (printed at the end). With python3 + matplotlib (CONTENTION_PYTHON names another
 * interpreter) it draws target/bench/contention.png: the CDF of the waits per acquire of every variant at P=8 (or
 * the largest P run), log x axis. The lock files and counters live in a temp dir, removed at the end.
 *
 * Env: DEADBOLT_REDIS_PORT, SYMFONY_LOCK_AUTOLOAD (library path), CONTENTION_PYTHON (interpreter with matplotlib),
 * CARGO_TARGET_DIR (where target/ is).
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/contention_report.php';
require_once __DIR__ . '/support/contention_run.php';
require_once __DIR__ . '/support/contention_stats.php';
require_once __DIR__ . '/support/csv.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/plot.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/resp.php';
require_once __DIR__ . '/support/run_keys.php';
require_once __DIR__ . '/support/scratch_dir.php';
require_once __DIR__ . '/support/stats.php';
require_once __DIR__ . '/support/targets.php';
require_once __DIR__ . '/support/worker_pool.php';

/** The P whose numbers are checked against the targets and drawn. */
const TARGET_P = 8;
/** The crowd whose numbers are checked against the targets of many waiters. */
const CROWD_P = 32;

const SYMFONY = 'symfony/lock Redis';
const DEADBOLT_REDIS = 'Deadbolt Redis';
const DEADBOLT_FLOCK = 'Deadbolt flock';
const DEADBOLT_DEFERRED = 'Deadbolt deferred';

$cli = new Cli('bench/contention.php', 'usage: php bench/contention.php [--port=PORT] [--procs=1,4,8,16]'
    . ' [--sections=1000] [--symfony-sections=1000] [--symfony-seconds=5] [--think=0] [--png=PATH | --no-png]');
$portOption = null;
$procsList = [1, 4, 8, 16];
$sections = 1000;
$symfonySections = 1000;
$symfonySeconds = 5;
$think = 0;
$drawPng = true;
$pngPath = null; // null: target/bench/contention.png
foreach (array_slice($argv, 1) as $arg) {
    [$option, $value] = array_pad(explode('=', $arg, 2), 2, null);
    match ($option) {
        '--port' => $portOption = $value ?? '',
        '--procs' => $procsList = array_map(static fn (string $p): int => $cli->positive($p, '--procs'),
            explode(',', $value ?? '')),
        '--sections' => $sections = $cli->positive($value ?? '', '--sections'),
        '--symfony-sections' => $symfonySections = $cli->positive($value ?? '', '--symfony-sections'),
        '--symfony-seconds' => $symfonySeconds = $cli->positive($value ?? '', '--symfony-seconds'),
        '--think' => $think = $value === '0' ? 0 : $cli->positive($value ?? '', '--think'),
        '--png' => [$drawPng, $pngPath] = [true, $value === null || $value === ''
            ? $cli->fail('--png needs a path') : $value],
        '--no-png' => $drawPng = false,
        default => $cli->fail("unknown argument '$arg'"),
    };
}
$port = redisPortSetting($portOption);
$port = $port === null ? null : $cli->port($port);
foreach (['pcntl_fork', 'posix_getpid'] as $function) {
    if (!function_exists($function)) {
        $cli->fail("needs PHP's pcntl and posix extensions ($function is missing)");
    }
}

$notes = [];
$runId = bin2hex(random_bytes(4));
$keys = new RunKeys($runId);
// Made before the scratch dir, so that at exit the processes of a run under way are killed before it is removed.
$pool = new WorkerPool(RUN_TIMEOUT_S);
$workDir = scratchDir($cli, "deadbolt-contention-$runId-");

/*
 * Each variant: a closure, called in the child after fork(), that returns a lock factory (an object with
 * createLock(string $resource, float $ttl)), and the per-process cap of its runs (contention_run.php).
 */
$variants = [];
$symfonyAutoload = symfonyLockAutoload();
if ($port === null) {
    $notes[] = 'No Redis port (--port=PORT or DEADBOLT_REDIS_PORT): the two Redis variants were not run.';
} else {
    if (!class_exists(Redis::class)) {
        $notes[] = 'phpredis is not loaded: the symfony/lock variant was not run.';
    } elseif (!loadLibrary($symfonyAutoload)) {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its variant was not run.';
    } else {
        $variants[SYMFONY] = [
            'factory' => static function () use ($port): object {
                $redis = new Redis();
                $redis->connect(REDIS_HOST, $port, 2.0);

                return new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($redis));
            },
            'sections' => $symfonySections,
            'seconds' => $symfonySeconds,
            'redis' => true,
            'metered' => false,
        ];
    }
    if (deadboltLoaded()) {
        $variants[DEADBOLT_REDIS] = [
            'factory' => static fn (): object => new Deadbolt\LockFactory(
                new Deadbolt\Store\RedisStore(sprintf('redis://%s:%d', REDIS_HOST, $port)),
            ),
            'sections' => $sections,
            'seconds' => null,
            'redis' => true,
            'metered' => true,
        ];
        $variants[DEADBOLT_DEFERRED] = [
            'factory' => static fn (): object => new Deadbolt\LockFactory(
                new Deadbolt\Store\RedisStore(sprintf('redis://%s:%d?release=deferred', REDIS_HOST, $port)),
            ),
            'sections' => $sections,
            'seconds' => null,
            'redis' => true,
            'metered' => true,
        ];
    }
}
if (deadboltLoaded()) {
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
    $cli->fail('nothing to run (no extension and no Redis port)');
}

// ---------------------------------------------------------------------------------------------------------------------
// Run everything

$names = array_keys($variants);
$results = [];
foreach ($procsList as $round => $procs) {
    $rotated = array_merge(array_slice($names, $round % count($names)), array_slice($names, 0, $round % count($names)));
    foreach ($rotated as $name) {
        fprintf(STDERR, "  running %s, P=%d ...\n", $name, $procs);
        $run = runContention($pool, $name, $variants[$name], $procs, $workDir, $keys->prefix, $port, $think);
        $results[$procs][$name] = $run + ['stats' => analyseContention($run)];
    }
    // Tables and picture list the variants in one order, whatever order they ran in.
    $results[$procs] = array_merge(array_flip($names), $results[$procs]);
}

// Keys left in Redis: the resources should be gone after release; the fencing counters and wake-up lists are ours.
if ($port !== null) {
    $redis = new Resp(REDIS_HOST, $port);
    $left = $keys->find($redis);
    $resources = array_filter($left, static fn (string $k): bool => str_starts_with($k, $keys->prefix)
        && !str_contains($k, '#deadbolt:'));
    if ($resources !== []) {
        $notes[] = sprintf('%d lock key(s) remained in Redis after the runs: %s', count($resources),
            implode(', ', array_slice($resources, 0, 5)));
    }
    $redis->delete($left);
    $redis->close();
}

// ---------------------------------------------------------------------------------------------------------------------
// Report

printf("Hand-off under contention: P processes, one resource, createLock(resource, %g) + acquire(true) + counter"
    . " file read/increment/write + release()\n", LOCK_TTL);
printf("sections per process: %d (Deadbolt), %d capped at %d s (symfony/lock); think time between sections: %d µs\n"
    . "PHP %s, %s, %d CPUs%s\n\n",
    $sections, $symfonySections, $symfonySeconds, $think, PHP_VERSION, php_uname('s') . ' ' . php_uname('r'),
    (int) trim((string) @shell_exec('nproc')), $port === null ? '' : ', Redis on ' . REDIS_HOST . ":$port");

printContentionRuns($results);
printContentionDiagnostics($results);

// Ratios Deadbolt Redis / symfony/lock, per P.
$x = static fn (?float $num, ?float $den): string => $num === null || $den === null || $den <= 0
    ? '-' : sprintf($num / $den < 1 ? '%.2fx' : '%.1fx', $num / $den);
if (isset($variants[SYMFONY], $variants[DEADBOLT_REDIS])) {
    $widths = [5, 22, 20, 20];
    echo "Deadbolt Redis vs symfony/lock Redis\n";
    row($widths, 'P', 'throughput (x faster)', 'p99 wait (x lower)', 'max wait (x lower)');
    rule($widths);
    foreach ($results as $procs => $runs) {
        $d = $runs[DEADBOLT_REDIS]['stats'];
        $s = $runs[SYMFONY]['stats'];
        row($widths, (string) $procs, $x($d['throughput'], $s['throughput']), $x($s['wait'][1] ?? null,
            $d['wait'][1] ?? null), $x($s['wait'][2] ?? null, $d['wait'][2] ?? null));
    }
    echo "\n";
}

// The lead's targets, at P=8.
if (isset($results[TARGET_P][DEADBOLT_REDIS])) {
    $d = $results[TARGET_P][DEADBOLT_REDIS]['stats'];
    $s = $results[TARGET_P][SYMFONY]['stats'] ?? null;
    $checks = [
        ['p99 wait < 5 ms', ms($d['wait'][1]) . ' ms', $d['wait'][1] < 5e6],
        ['max wait < 20 ms', ms($d['wait'][2]) . ' ms', $d['wait'][2] < 20e6],
    ];
    if ($s !== null && $s['throughput'] !== null) {
        $ratio = $d['throughput'] / $s['throughput'];
        $checks[] = ['>= 3x symfony throughput', sprintf('%.1fx', $ratio), $ratio >= 3];
    }
    $checks[] = $d['handoff'] === null
        ? ['median hand-off < 1 ms', 'no hand-off to a waiting process was seen', false]
        : ['median hand-off < 1 ms', ms($d['handoff'][0], 3) . ' ms', $d['handoff'][0] < 1e6];
    printTargets(sprintf('Targets at P=%d (Deadbolt Redis)', TARGET_P), $checks);
}
// The Redis issue's targets at P=32: the throughput still a multiple of symfony/lock's, and no wait past 100 ms.
if (isset($results[CROWD_P][DEADBOLT_REDIS])) {
    $d = $results[CROWD_P][DEADBOLT_REDIS]['stats'];
    $s = $results[CROWD_P][SYMFONY]['stats'] ?? null;
    $checks = [['max wait < 100 ms', ms($d['wait'][2]) . ' ms', $d['wait'][2] < 100e6]];
    if ($s !== null && $s['throughput'] !== null) {
        $ratio = $d['throughput'] / $s['throughput'];
        $checks[] = ['>= 2x symfony throughput', sprintf('%.1fx', $ratio), $ratio >= 2];
    }
    printTargets(sprintf('Targets at P=%d (Deadbolt Redis)', CROWD_P), $checks);
}

$csvDir = outputDir() . "/contention-$runId";
mkdir($csvDir);
foreach ($names as $name) {
    writeContentionCsv("$csvDir/" . strtolower(trim(preg_replace('/[^A-Za-z]+/', '-', $name), '-')) . '.csv',
        $results, $name);
}

// The picture: CDF of the waits at P=8 (or the largest P run).
if ($drawPng) {
    $drawP = isset($results[TARGET_P]) ? TARGET_P : max(array_keys($results));
    $pngPath ??= outputDir() . '/contention.png';
    $why = plotWaits($pngPath, "Wait per acquire(true), $drawP processes on one lock, think time $think µs"
        . ' (bench/contention.php)', contentionWaitSeries($results[$drawP]));
    if ($why === null) {
        echo "Picture (CDF of the waits at P=$drawP): $pngPath\n";
    } else {
        $notes[] = $why;
    }
}
echo "Raw records (one CSV per variant, kept): $csvDir\n";

printNotes(array_merge($notes, contentionNotes($results)));
