<?php

/*
 * Redis lock cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it.
 *
 *   bash scripts/redis-start.sh /tmp/deadbolt-bench-redis     # prints PORT (stop: scripts/redis-stop.sh DIR)
 *   php -d extension=target/release/libdeadbolt.so bench/redis.php --port=PORT [--pin=one|two] [cycles=20000]
 *       [names=64] [rounds=5]
 *
 * The port may also come from the environment: DEADBOLT_REDIS_PORT=PORT php ... bench/redis.php. The server must be
 * a private one on 127.0.0.1: the command counts start with CONFIG RESETSTAT. --pin=one runs php and redis-server on
 * CPU 0, --pin=two php on CPU 0 and redis-server on CPU 1 (taskset; the server's CPUs are given back at the end): the
 * two speeds of loopback, measured one at a time (bench/README.md).
 *
 * Variants (support/redis_cycle_variants.php), measured side by side in one process:
 *   (a) phpredis SET key token NX PX 30000 + DEL key: two round trips, the floor for any Redis lock
 *   (b) phpredis SET NX PX + Lua compare-and-delete sent whole with EVAL (the OTA service's legacy lock)
 *   (c) symfony/lock 5.4 RedisStore over phpredis: LockFactory::createLock($name, 30) + acquire(false) + release()
 *   (d) symfony/lock 5.4 RedisStore over Predis
 *   (e) Deadbolt RedisStore by DSN (redis://127.0.0.1:PORT, native connection), the same three calls
 *   (f) Deadbolt RedisStore over the same \Redis object as (a), (b), (c)
 *   (g) Deadbolt RedisStore over the same Predis client as (d)
 *   (h) (e) with release=deferred: release() sends its script and reads the reply before the next command
 *   (n) (e) with records=off: no holder record beside the lock (what the records cost)
 *   (u) Deadbolt RedisStore by unix socket DSN (redis:///path/to/redis.sock), the same three calls as (e)
 *   (x) (u) with release=deferred
 *   (v) (a) over the server's unix socket, the floor to read (u) against; (w) (r) over the unix socket
 *   (s) reference, not a lock library: the smallest pair of Lua scripts (EVALSHA) that keeps symfony/lock's data model
 *   (r) not a lock: one phpredis PING, a bare round trip to read the rows against
 *
 * After a warm-up, every round runs each variant for `cycles` cycles, in slices of 250 cycles taken in turn with the
 * order rotating, so that machine noise hits all variants alike. The table shows the median round per variant, ratios
 * to (a) and (c), the php process's CPU time and Redis' execution time per cycle.
 * Then, per variant, a dedicated pass of `cycles` cycles between CONFIG RESETSTAT and INFO commandstats counts the
 * commands Redis executed (commands called by scripts included), and a short pass under MONITOR counts what the
 * client itself sent (round trips). Without the extension the Deadbolt rows are left out and a note says so; a
 * variant whose library is missing, or that throws, is left out with a note too.
 *
 * Every resource name carries a prefix unique to the run (deadbolt-bench:<random>:<variant>:<n>). At the end (also
 * after an error) every key whose name contains that prefix is deleted, the lock keys and the keys a store derives
 * from them (Deadbolt's name#deadbolt:fence{name}, name#deadbolt:queue{name} and the like); what remained
 * after release is reported. Nothing is written to disk.
 *
 * Env: DEADBOLT_REDIS_PORT (when --port is not given), SYMFONY_LOCK_AUTOLOAD, PREDIS_AUTOLOAD (library paths).
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/process.php';
require_once __DIR__ . '/support/redis_counts.php';
require_once __DIR__ . '/support/redis_cycle_variants.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/resp.php';
require_once __DIR__ . '/support/run_keys.php';
require_once __DIR__ . '/support/stats.php';

/** Cycles of the MONITOR pass (its output is buffered by Redis until read: keep it short). */
const MONITOR_CYCLES = 500;
/** Cycles a variant runs before the next one takes its turn, within a round. */
const SLICE = 250;

$cli = new Cli(
    'bench/redis.php',
    'usage: php bench/redis.php --port=PORT [--pin=one|two] [cycles=20000] [names=64] [rounds=5]'
    . '   (or DEADBOLT_REDIS_PORT=PORT)',
    'A private server: bash scripts/redis-start.sh DIR prints a port; scripts/redis-stop.sh DIR stops it.',
);
$portOption = null;
$pinning = null;
$positional = [];
foreach (array_slice($argv, 1) as $arg) {
    if (str_starts_with($arg, '--port=')) {
        $portOption = substr($arg, 7);
    } elseif (str_starts_with($arg, '--pin=')) {
        $pinning = substr($arg, 6);
    } elseif ($arg === '-h' || $arg === '--help') {
        echo $cli->usage, "\n";
        exit(0);
    } else {
        $positional[] = $arg;
    }
}
$port = redisPortSetting($portOption) ?? $cli->fail('no Redis port: pass --port=PORT or set DEADBOLT_REDIS_PORT');
$port = $cli->port($port);
if (count($positional) > 3) {
    $cli->fail('too many arguments');
}
$cycles = $cli->positional($positional, 0, 20000, 'cycles');
$nameCount = $cli->positional($positional, 1, 64, 'names');
$rounds = $cli->positional($positional, 2, 5, 'rounds');
$warmup = min($cycles, 2000);
$monitorCycles = min($cycles, MONITOR_CYCLES);

try {
    $meter = new Resp(REDIS_HOST, $port);
    $meter->call('PING');
    $serverInfo = (string) $meter->call('INFO', 'server');
    $redisVersion = preg_match('/^redis_version:(\S+)/m', $serverInfo, $m) === 1 ? $m[1] : '?';
    $redisPid = preg_match('/^process_id:(\d+)/m', $serverInfo, $m) === 1 ? $m[1] : null;
} catch (RuntimeException $e) {
    $cli->fail($e->getMessage() . ' (is redis-server running? bash scripts/redis-start.sh DIR prints a port)');
}
if ($pinning !== null) {
    $error = $redisPid === null ? 'INFO server gave no process_id: cannot pin' : pinProcesses($pinning, $redisPid);
    if ($error !== null) {
        $cli->fail($error);
    }
}
$keys = new RunKeys(bin2hex(random_bytes(6)));
$keys->deleteAtExit($meter, $cli->script);

// The server's unix socket, when it has one this process can reach (scripts/redis-start.sh gives it one).
$socket = $meter->call('CONFIG', 'GET', 'unixsocket')[1] ?? '';
$socket = is_string($socket) && $socket !== '' && file_exists($socket) ? $socket : null;
['labels' => $labels, 'variants' => $variants, 'libraries' => $libraries, 'notes' => $notes]
    = redisCycleVariants($port, $socket, $keys, $nameCount);
if ($socket === null) {
    $notes[] = 'The server listens on no unix socket this process can reach: (u), (x), (v) and (w) are missing.';
}

// ---------------------------------------------------------------------------------------------------------------
// Warm-up, timed rounds, then the counting passes

$bench = new CycleRounds($variants, $cycles, $rounds, SLICE);
$memory = [];
$bench->warmUp($warmup, static function (string $letter) use (&$memory): void {
    if ($letter === 'e') {
        $memory['before'] = memorySnapshot();
    }
});
// Slices of SLICE cycles: the loopback round trip on a VM can switch between two speeds for seconds at a time (see
// bench/README.md), and fine interleaving makes every variant see the same mixture.
$bench->measure();
if ($bench->has('e')) {
    $memory['after'] = memorySnapshot();
}

['commands' => $commands, 'serverUs' => $serverUs, 'note' => $note] = countExecuted($bench, $meter, $cycles);
if ($note !== null) {
    $notes[] = $note;
}
['sent' => $sent, 'note' => $note] = countSent($bench, $meter, $port, $monitorCycles);
if ($note !== null) {
    $notes[] = $note;
}
$leftOver = deleteRedisCycleKeys($meter, $keys);

// ---------------------------------------------------------------------------------------------------------------
// Report

$medians = $bench->medians();
$floorUs = $medians['a'] ?? null;
$symfonyUs = $medians['c'] ?? null;
$sum = static fn (?array $counts): string => $counts === null ? '-' : sprintf('%.2f', array_sum($counts));

printf("Redis lock cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names,"
    . " warm-up %d, interleaved in slices of %d\n", $cycles, $rounds, $nameCount, $warmup, min(SLICE, $cycles));
echo phpAndMachine(), "\n";
printf("Redis %s at %s:%d; %s\n", $redisVersion, REDIS_HOST, $port, implode(', ', $libraries) ?: 'no client library');
$online = @file_get_contents('/sys/devices/system/cpu/online');
printf("CPUs online: %s; this php may run on %s, redis-server (pid %s) on %s\n\n",
    $online === false ? '?' : trim($online), cpusAllowed('self') ?? '?', $redisPid ?? '?',
    ($redisPid === null ? null : cpusAllowed($redisPid)) ?? '? (not readable from here)');

$widths = [30, 8, 13, 6, 6, 7, 8, 5, 4];
row($widths, 'variant', 'µs/cycle', 'min..max', 'vs (a)', 'vs (c)', 'PHP CPU', 'Redis µs', 'cmds', 'sent');
rule($widths);
foreach ($labels as $letter => $label) {
    if (!isset($medians[$letter])) {
        row($widths, $label, isset($bench->broken[$letter]) ? 'failed' : '-', '-', '-', '-', '-', '-', '-', '-');
        continue;
    }
    $us = $medians[$letter];
    // Time Redis spent executing what the client sent; a script's time includes the commands it calls.
    $redisUs = isset($sent[$letter], $serverUs[$letter])
        ? array_sum(array_intersect_key($serverUs[$letter], $sent[$letter])) : null;
    row(
        $widths,
        $label,
        sprintf('%.2f', $us),
        sprintf('%.1f..%.1f', min($bench->wallUs[$letter]), max($bench->wallUs[$letter])),
        $floorUs === null ? '-' : sprintf('%.2fx', $us / $floorUs),
        $symfonyUs === null ? '-' : sprintf('%.2fx', $us / $symfonyUs),
        sprintf('%.1f', median($bench->cpuUs[$letter])),
        $redisUs === null ? '-' : sprintf('%.1f', $redisUs),
        $sum($commands[$letter] ?? null),
        $sum($sent[$letter] ?? null),
    );
}
echo <<<LEGEND

µs/cycle: median round (wall clock); min..max: fastest and slowest round; vs (a), vs (c): µs/cycle ratios.
PHP CPU: µs of CPU (user + system) this php process used per cycle, median round. The rest of a cycle is waiting
  for Redis: its execution time plus the loopback round trips (socket wake-ups, scheduling).
Redis µs: µs per cycle Redis spent executing the commands sent (INFO commandstats usec; a script includes its calls).
cmds: commands Redis executed per cycle (INFO commandstats over a pass of $cycles cycles; the commands a script
  calls included). sent: commands the client sent per cycle = round trips (MONITOR over $monitorCycles cycles);
  (h) and (x) do not wait for their release's reply, so one of their two is off the critical path.

LEGEND;

$breakdown = static fn (array $counts): string => implode(', ', array_map(
    static fn (string $name, float $perCycle): string => sprintf('%s %.2f', $name, $perCycle),
    array_keys($counts),
    $counts,
)) ?: 'none';
foreach (['Commands executed per cycle, by name (INFO commandstats):' => $commands,
    'Commands sent per cycle, by name (MONITOR):' => $sent] as $title => $perVariant) {
    if ($perVariant !== []) {
        echo "\n$title\n";
        foreach ($perVariant as $letter => $counts) {
            printf("  (%s) %s\n", $letter, $breakdown($counts));
        }
    }
}

if (isset($memory['after'])) {
    printMemory('Deadbolt by DSN (e), memory', $memory['before'], 'after its last timed cycle:', $memory['after'],
        $warmup + $cycles * $rounds);
}

/** The value below which a fraction $q of $values lie (the rank floor(q * n), counted from 0). */
$quantile = static function (array $values, float $q): float {
    sort($values);

    return $values[min(count($values) - 1, (int) floor($q * count($values)))];
};
$probe = ($bench->sliceUs['r'] ?? []) !== [] ? 'r' : (($bench->sliceUs['a'] ?? []) !== [] ? 'a' : null);
if ($probe !== null) {
    $fast = $quantile($bench->sliceUs[$probe], 0.1);
    $slow = $quantile($bench->sliceUs[$probe], 0.9);
    if ($slow > 2 * $fast) {
        $notes[] = sprintf('%s took %.1f µs per call in its fastest tenth of slices and %.1f µs or more in its slowest'
            . ' tenth: the round trip switched speed during the run (typically php and redis-server sharing one CPU'
            . ' versus running on two, see bench/README.md). The ratios mix both; pin both processes to compare them'
            . ' at one speed.', $labels[$probe], $fast, $slow);
    }
}

foreach ($bench->broken as $letter => $error) {
    $notes[] = sprintf('%s threw, its row is empty: %s', $labels[$letter], $error);
}
foreach ($bench->failures as $letter => $count) {
    if ($count > 0) {
        $notes[] = sprintf('%s: %d acquires failed (another client using the same keys?): its time is not a clean cycle'
            . ' time.', $labels[$letter], $count);
    }
}
foreach ($leftOver as $letter => $shapes) {
    $parts = [];
    ksort($shapes);
    foreach ($shapes as $shape => [$count, $pttl]) {
        $parts[] = sprintf('%d x %s (%s)', $count, $shape,
            $pttl === -1 ? 'no expiry' : ($pttl >= 0 ? sprintf('expiring within %.0f s', $pttl / 1000) : 'gone'));
    }
    $notes[] = sprintf('%s: after its last release these keys remained (NAME = one of its %d resource names;'
        . ' deleted now): %s.%s', $labels[$letter] ?? "($letter)", $nameCount, implode(', ', $parts),
        isset($shapes['NAME']) ? ' The lock keys themselves should be gone once released.' : '');
}
printNotes($notes, 116);
