<?php

/*
 * Deadbolt's own lock scripts run two ways on one server: by EVALSHA, as Deadbolt runs them, and as Redis Functions
 * (FUNCTION LOAD once, then FCALL), with the same bodies. It answers what calling a function instead of a script
 * saves in Redis time, the question of the Redis issue's first item (bench/README.md, "Scripts or functions").
 *
 *   bash scripts/redis-start.sh /tmp/deadbolt-bench-redis     # prints PORT (stop: scripts/redis-stop.sh DIR)
 *   php -d extension=target/release/libdeadbolt.so bench/functions.php --port=PORT [cycles=20000] [rounds=5]
 *
 * It needs the extension, a private Redis 7.0+ or Valkey on 127.0.0.1 (it flushes the script cache, loads a library
 * and resets the command statistics) and MONITOR. The scripts are not copied from the sources: a Deadbolt lock
 * cycle and a refused acquire are run once under MONITOR after SCRIPT FLUSH, so the server is sent the exact text
 * (SCRIPT LOAD) and the exact keys and arguments (EVALSHA) of this build; those bodies become the library's two
 * functions unchanged, and the bench replays the captured calls both ways from its own connection:
 *   cycle     the acquire of a free key and the release nobody waits for (Deadbolt's common case)
 *   refused   an acquire of a key another token holds (the path that defines the helper functions)
 * Every round runs each row for `cycles` calls between CONFIG RESETSTAT and INFO commandstats; the table gives the
 * median round: Redis µs per cycle (the EVALSHA or FCALL entries of commandstats: the whole script, the commands it
 * called included) and the wall time of the bench's own round trips. At the end the library is deleted and the run's
 * keys too.
 *
 * Env: DEADBOLT_REDIS_PORT (when --port is not given).
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/resp.php';
require_once __DIR__ . '/support/run_keys.php';
require_once __DIR__ . '/support/stats.php';

const LIBRARY = 'deadbolt_bench';

$cli = new Cli('bench/functions.php', 'usage: php bench/functions.php --port=PORT [cycles=20000] [rounds=5]',
    'A private server: bash scripts/redis-start.sh DIR prints a port; scripts/redis-stop.sh DIR stops it.');
[$options, $positional] = $cli->arguments($argv, ['port']);
$port = $cli->port(redisPortSetting($options['port'] ?? null)
    ?? $cli->fail('no Redis port: pass --port=PORT or set DEADBOLT_REDIS_PORT'));
if (count($positional) > 2) {
    $cli->fail('too many arguments');
}
$cycles = $cli->positional($positional, 0, 20000, 'cycles');
$rounds = $cli->positional($positional, 1, 5, 'rounds');
if (!extension_loaded('deadbolt')) {
    $cli->fail('the deadbolt extension is not loaded: its scripts are what this measures');
}

$meter = new Resp(REDIS_HOST, $port);
$info = (string) $meter->call('INFO', 'server');
$version = preg_match('/^redis_version:(\S+)/m', $info, $m) === 1 ? $m[1] : '?';
if ((int) $version < 7) {
    echo "Redis $version has no functions (7.0+): nothing to compare.\n";
    exit(0);
}
$keys = new RunKeys(bin2hex(random_bytes(6)));
$keys->deleteAtExit($meter, $cli->script);
register_shutdown_function(static function () use ($meter): void {
    try {
        $meter->call('FUNCTION', 'DELETE', LIBRARY);
    } catch (RuntimeException) {
        // Not loaded (the capture failed first): nothing to delete.
    }
});

$captured = captureScripts($port, $meter, $keys->prefix . 'functions');
$meter->call('FUNCTION', 'LOAD', 'REPLACE', library($captured['save'], $captured['delete']));

$rows = [
    'cycle, EVALSHA' => static fn () => cycle($meter, $captured, 'EVALSHA'),
    'cycle, FCALL' => static fn () => cycle($meter, $captured, 'FCALL'),
    'refused, EVALSHA' => static fn () => replay($meter, 'EVALSHA', $captured['save'], $captured['save']['refused']),
    'refused, FCALL' => static fn () => replay($meter, 'FCALL', $captured['save'], $captured['save']['refused']),
];
$results = [];
for ($round = 0; $round < $rounds; ++$round) {
    $names = array_keys($rows);
    $names = [...array_slice($names, $round % count($names)), ...array_slice($names, 0, $round % count($names))];
    foreach ($names as $name) {
        $refused = str_starts_with($name, 'refused');
        if ($refused) {
            replay($meter, 'EVALSHA', $captured['save'], $captured['save']['free']); // the holder for the refusals
        }
        $meter->call('CONFIG', 'RESETSTAT');
        $started = hrtime(true);
        for ($i = 0; $i < $cycles; ++$i) {
            $rows[$name]();
        }
        $wallUs = (hrtime(true) - $started) / 1e3 / $cycles;
        $stats = $meter->commandStats();
        $serverUs = (($stats['evalsha'][1] ?? 0) + ($stats['fcall'][1] ?? 0)) / $cycles;
        if ($refused) {
            replay($meter, 'EVALSHA', $captured['delete'], $captured['delete']['free']);
        }
        $results[$name]['server'][] = $serverUs;
        $results[$name]['wall'][] = $wallUs;
    }
}

printf("Deadbolt's lock scripts by EVALSHA and as Redis Functions (same bodies): %d calls x %d rounds, median round\n",
    $cycles, $rounds);
echo phpAndMachine(), "\n";
printf("Redis %s at %s:%d; SAVE %d bytes of Lua, DELETE %d\n\n", $version, REDIS_HOST, $port,
    strlen($captured['save']['code']), strlen($captured['delete']['code']));
$widths = [18, 14, 12, 14];
row($widths, 'row', 'Redis µs', 'vs EVALSHA', 'wall µs');
rule($widths);
foreach ($results as $name => $result) {
    $server = median($result['server']);
    $base = median($results[str_replace('FCALL', 'EVALSHA', $name)]['server']);
    row($widths, $name, sprintf('%.2f', $server), sprintf('%.3fx', $server / $base),
        sprintf('%.1f', median($result['wall'])));
}
printNotes([
    'Per cycle (two calls: acquire, release) or per refused acquire. Redis µs counts the whole script or function,'
    . ' the commands it called included; wall µs is the bench\'s own round trips.',
    'The functions keep the scripts\' bodies, so they define the same helper functions on every call: what FCALL'
    . ' saves here is the dispatch. Deadbolt\'s common case runs before any helper is defined (free_key.lua,'
    . ' release_alone.lua), which is why the cycle rows differ by little.',
]);

/**
 * Runs one Deadbolt lock cycle and one refused acquire under MONITOR after SCRIPT FLUSH, and returns what the server
 * was sent: per script (save, delete) its code and the EVALSHA arguments of each call.
 *
 * @return array{save: array{code: string, sha: string, function: string, free: list<string>, refused: list<string>},
 *               delete: array{code: string, sha: string, function: string, free: list<string>}}
 */
function captureScripts(int $port, Resp $meter, string $resource): array
{
    $meter->call('SCRIPT', 'FLUSH');
    $monitor = new Resp(REDIS_HOST, $port);
    if ($monitor->call('MONITOR') !== 'OK') {
        throw new RuntimeException('MONITOR did not answer OK');
    }
    $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore(sprintf('redis://%s:%d', REDIS_HOST, $port)));
    $holder = $factory->createLock($resource, 30);
    $other = $factory->createLock($resource, 30);
    if (!$holder->acquire(false) || $other->acquire(false)) {
        throw new RuntimeException('the capture lock cycle did not go as expected (another client on the key?)');
    }
    $holder->release();
    $sentinel = 'deadbolt-bench-sentinel-' . bin2hex(random_bytes(4));
    $meter->call('ECHO', $sentinel);
    $codes = [];
    $calls = [];
    while (!str_contains($line = $monitor->readLine(), $sentinel)) {
        if (preg_match('/^\+\d+\.\d+ \[\d+ ([^\]]+)\] (.*)$/', $line, $m) !== 1 || $m[1] === 'lua') {
            continue;
        }
        // Possessive: a script's text is one token of many kilobytes, too long for a backtracking match.
        preg_match_all('/"((?:[^"\\\\]++|\\\\.)*+)"/', $m[2], $tokens);
        $args = array_map('stripcslashes', $tokens[1]);
        $command = strtoupper($args[0] ?? '');
        if ($command === 'SCRIPT' && strtoupper($args[1] ?? '') === 'LOAD') {
            $codes[sha1($args[2])] = $args[2];
        } elseif ($command === 'EVALSHA') {
            $calls[] = array_slice($args, 1);
        }
    }
    $monitor->close();
    // A call that met NOSCRIPT is sent again after SCRIPT LOAD: keep each distinct call once.
    $calls = array_values(array_unique($calls, SORT_REGULAR));
    [$save, $delete] = [$calls[0][0] ?? '', $calls[count($calls) - 1][0] ?? ''];
    $saves = array_values(array_filter($calls, static fn (array $call): bool => $call[0] === $save));
    if (!isset($codes[$save], $codes[$delete], $saves[1]) || $save === $delete) {
        throw new RuntimeException('MONITOR did not show the scripts of a lock cycle (SCRIPT LOAD, EVALSHA)');
    }

    return [
        'save' => ['code' => $codes[$save], 'sha' => $save, 'function' => LIBRARY . '_save',
            'free' => array_slice($saves[0], 1), 'refused' => array_slice($saves[1], 1)],
        'delete' => ['code' => $codes[$delete], 'sha' => $delete, 'function' => LIBRARY . '_delete',
            'free' => array_slice($calls[count($calls) - 1], 1)],
    ];
}

/** A library of the two scripts, each the body of a function of the same KEYS and ARGV. */
function library(array ...$scripts): string
{
    $library = '#!lua name=' . LIBRARY . "\n";
    foreach ($scripts as $script) {
        $library .= sprintf("redis.register_function('%s', function(KEYS, ARGV)\n%s\nend)\n", $script['function'],
            $script['code']);
    }

    return $library;
}

/** One captured call again: EVALSHA of the script's SHA, or FCALL of its function, with the same arguments. */
function replay(Resp $redis, string $how, array $script, array $arguments): mixed
{
    return $redis->call($how, $how === 'FCALL' ? $script['function'] : $script['sha'], ...$arguments);
}

/** Acquire and release of the free key, as Deadbolt's first cycle did; both must succeed. */
function cycle(Resp $redis, array $captured, string $how): void
{
    if (replay($redis, $how, $captured['save'], $captured['save']['free']) !== 1
        || replay($redis, $how, $captured['delete'], $captured['delete']['free']) !== 1) {
        throw new RuntimeException("a $how cycle did not take and release the lock");
    }
}
