<?php

/*
 * What a quorum of independent masters costs: the lock cycle (createLock + acquire(false) + release) on one master
 * by DSN, and on three masters through Deadbolt's CombinedStore (the masters asked at once) and through
 * symfony/lock's CombinedStore over its RedisStore on phpredis (asked one after the other), beside symfony/lock's
 * RedisStore on one master; consensus strategy; measured side by side in one run (support/cycle_rounds.php).
 *
 *   php -d extension=target/release/libdeadbolt.so bench/quorum.php --ports=P1,P2,P3 [--delay-ms=D]
 *       [cycles=3000] [rounds=5]
 *
 * P1..P3 are three redis-servers that know nothing of each other. `make bench` starts them. On loopback a round
 * trip is tens of microseconds of CPU, which the three servers, PHP and the threads share (two cores here), so
 * asking at once saves little there. --delay-ms=D puts each master behind a forwarder that holds every request D ms
 * (support/delay_proxy.php): masters across a network, where a round trip is mostly waiting, and asking at once
 * saves all but one of them.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';

const SLICE = 250;

$cli = new Cli('bench/quorum.php', 'usage: php bench/quorum.php --ports=P1,P2,P3 [cycles=3000] [rounds=5]');
[$options, $positional] = $cli->arguments($argv, ['ports', 'delay-ms']);
$ports = $cli->ports($options['ports'] ?? null, 3, 'ports');
$delayMs = null;
if (isset($options['delay-ms'])) {
    $delayMs = is_numeric($options['delay-ms']) && (float) $options['delay-ms'] > 0
        ? (float) $options['delay-ms']
        : $cli->fail('--delay-ms must be a positive number of milliseconds');
}
$cycles = $cli->positional($positional, 0, 3000, 'cycles');
$rounds = $cli->positional($positional, 1, 5, 'rounds');
if (!deadboltLoaded()) {
    $cli->fail('the deadbolt extension is not loaded');
}
$withSymfony = loadLibrary(symfonyLockAutoload());

/** @var list<array{resource, array<int, resource>}> $proxies */
$proxies = [];
if ($delayMs !== null) {
    $ports = array_map(static function (int $port) use ($delayMs, &$proxies, $cli): int {
        $proxy = proc_open(
            [PHP_BINARY, __DIR__ . '/support/delay_proxy.php', (string) $port, (string) $delayMs],
            [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => STDERR],
            $pipes,
        );
        $ready = $proxy === false ? false : fgets($pipes[1]);
        if ($ready === false || !str_starts_with($ready, 'ready ')) {
            $cli->fail("the delaying forwarder for port $port did not start");
        }
        $proxies[] = [$proxy, $pipes]; // its input stays open while this runs

        return (int) substr($ready, 6);
    }, $ports);
}

/** @return Closure(int): int cycles of $factory's lock, counting refused acquires */
function cycles(object $factory, string $resource): Closure
{
    return static function (int $n) use ($factory, $resource): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $factory->createLock($resource, 30.0);
            $lock->acquire(false) ? $lock->release() : ++$failed;
        }

        return $failed;
    };
}

$dsn = static fn (int $port): string => "redis://127.0.0.1:$port";
$variants = [
    '(e) Deadbolt, one master' => cycles(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn($ports[0]))), 'bench:quorum:e'),
    '(q) Deadbolt Combined x3' => cycles(new Deadbolt\LockFactory(new Deadbolt\Store\CombinedStore(
        array_map(static fn (int $port) => new Deadbolt\Store\RedisStore($dsn($port)), $ports),
        new Deadbolt\Strategy\ConsensusStrategy(),
    )), 'bench:quorum:q'),
];
if ($withSymfony) {
    $phpredis = static function (int $port): Redis {
        $redis = new Redis();
        $redis->connect('127.0.0.1', $port);

        return $redis;
    };
    $variants['(c) symfony/lock, one master'] = cycles(new Symfony\Component\Lock\LockFactory(
        new Symfony\Component\Lock\Store\RedisStore($phpredis($ports[0])),
    ), 'bench:quorum:c');
    $variants['(y) symfony/lock Combined x3'] = cycles(new Symfony\Component\Lock\LockFactory(
        new Symfony\Component\Lock\Store\CombinedStore(
            array_map(static fn (int $port) => new Symfony\Component\Lock\Store\RedisStore($phpredis($port)), $ports),
            new Symfony\Component\Lock\Strategy\ConsensusStrategy(),
        ),
    ), 'bench:quorum:y');
}

$bench = new CycleRounds($variants, $cycles, $rounds, SLICE);
$bench->warmUp(min($cycles, 500));
$bench->measure();
$medians = $bench->medians();

foreach ($proxies as [$proxy]) {
    proc_terminate($proxy);
}
printf(
    "Lock cycle on three independent masters (%s), consensus, %d cycles x %d rounds, median of rounds\n",
    $delayMs === null ? 'loopback' : "loopback, each request held $delayMs ms",
    $cycles,
    $rounds,
);
echo phpAndMachine(), "\n";
$one = $medians['(e) Deadbolt, one master'] ?? null;
$symfony = $medians['(y) symfony/lock Combined x3'] ?? null;
printf("%-30s %10s %10s %12s\n", 'variant', 'µs/cycle', 'vs (e)', 'vs (y)');
foreach ($medians as $name => $us) {
    printf(
        "%-30s %10.2f %10s %12s\n",
        $name,
        $us,
        $one === null ? '-' : sprintf('%.2fx', $us / $one),
        $symfony === null ? '-' : sprintf('%.2fx', $us / $symfony),
    );
}
if (!$withSymfony) {
    echo "symfony/lock not found (", symfonyLockAutoload(), "): its variants were left out\n";
}
foreach ($bench->broken as $name => $why) {
    echo "$name failed: $why\n";
}
foreach ($bench->failures as $name => $failed) {
    if ($failed > 0) {
        echo "$name: $failed acquires refused\n";
    }
}
