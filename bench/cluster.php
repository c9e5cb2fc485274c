<?php

/*
 * What the native Redis Cluster connection costs: the lock cycle (createLock + acquire(false) + release) on a
 * three-master cluster by Deadbolt's cluster DSN, beside Deadbolt over a lent \RedisCluster, symfony/lock over the same
 * \RedisCluster, and phpredis SET NX PX + DEL through \RedisCluster (the floor). Every variant talks to the same three
 * servers, measured side by side in one run (support/cycle_rounds.php). No row on another server: on a 2-core machine
 * a loopback round trip depends on which processes are awake, which is not what this compares (bench/README.md).
 *
 *   php -d extension=target/release/libdeadbolt.so bench/cluster.php --ports=P1,P2,P3 [cycles=5000] [rounds=5]
 *
 * P1..P3 are empty redis-servers started with --cluster-enabled yes: this joins them (CLUSTER ADDSLOTSRANGE, MEET).
 * `make bench` starts them.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';

const SLICE = 250;
const NAMES = 64;

$cli = new Cli('bench/cluster.php', 'usage: php bench/cluster.php --ports=P1,P2,P3 [cycles=5000] [rounds=5]');
[$options, $positional] = $cli->arguments($argv, ['ports']);
$ports = $cli->ports($options['ports'] ?? null, 3, 'ports');
$cycles = $cli->positional($positional, 0, 5000, 'cycles');
$rounds = $cli->positional($positional, 1, 5, 'rounds');
if (!deadboltLoaded() || !extension_loaded('redis')) {
    $cli->fail('the deadbolt and redis (phpredis) extensions must both be loaded');
}

/** Gives each server a third of the slots and introduces them; returns once every one reports cluster_state:ok. */
function joinCluster(Cli $cli, array $ports): void
{
    $nodes = array_map(static function (int $port): Redis {
        $node = new Redis();
        $node->connect('127.0.0.1', $port, 2.0);

        return $node;
    }, $ports);
    foreach ([[0, 5460], [5461, 10922], [10923, 16383]] as $i => [$start, $end]) {
        $nodes[$i]->rawCommand('CLUSTER', 'ADDSLOTSRANGE', (string) $start, (string) $end);
        foreach ($ports as $j => $port) {
            if ($j !== $i) {
                $nodes[$i]->rawCommand('CLUSTER', 'MEET', '127.0.0.1', (string) $port);
            }
        }
    }
    $deadline = microtime(true) + 30;
    foreach ($nodes as $i => $node) {
        while (!str_contains((string) $node->rawCommand('CLUSTER', 'INFO'), 'cluster_state:ok')) {
            if (microtime(true) > $deadline) {
                $cli->fail("the node on port {$ports[$i]} never reported cluster_state:ok");
            }
            usleep(50_000);
        }
    }
}

joinCluster($cli, $ports);
$seeds = array_map(static fn (int $port): string => "127.0.0.1:$port", $ports);
$clusterClient = new RedisCluster(null, $seeds, 2.0, 2.0);
$dsn = 'redis:?host[' . implode(']&host[', $seeds) . ']&redis_cluster=1';

/** @return list<string> names spread over the three masters */
$names = static fn (string $letter): array => array_map(static fn (int $i): string => "bench:cluster:$letter:$i", range(0, NAMES - 1));
$cycle = static function (object $factory, string $letter) use ($names): Closure {
    $keys = $names($letter);

    return static function (int $n) use ($factory, $keys): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $factory->createLock($keys[$i % NAMES], 30);
            $lock->acquire(false) ? $lock->release() : ++$failed;
        }

        return $failed;
    };
};
$floorKeys = $names('a');
$variants = [
    '(a) \RedisCluster SET NX PX + DEL' => static function (int $n) use ($clusterClient, $floorKeys): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $key = $floorKeys[$i % NAMES];
            $clusterClient->set($key, 't', ['NX', 'PX' => 30000]) ? $clusterClient->del($key) : ++$failed;
        }

        return $failed;
    },
];
$notes = [];
if (loadLibrary(symfonyLockAutoload())) {
    $variants['(c) symfony/lock + \RedisCluster'] = $cycle(
        new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($clusterClient)),
        'c',
    );
} else {
    $notes[] = 'symfony/lock not found at ' . symfonyLockAutoload() . ': (c) is missing.';
}
$variants['(e) Deadbolt by cluster DSN'] = $cycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn)), 'e');
$variants['(f) Deadbolt + \RedisCluster'] = $cycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($clusterClient)), 'f');

$bench = new CycleRounds($variants, $cycles, $rounds, SLICE);
$bench->warmUp(min($cycles, 1000));
$bench->measure();
$medians = $bench->medians();

printf("Lock cycle on a three-master Redis Cluster (loopback), %d cycles x %d rounds, median of rounds\n", $cycles, $rounds);
echo phpAndMachine(), ', phpredis ', phpversion('redis'), "\n";
$floor = $medians['(a) \RedisCluster SET NX PX + DEL'] ?? null;
$symfony = $medians['(c) symfony/lock + \RedisCluster'] ?? null;
printf("%-40s %10s %8s %8s\n", 'variant', 'µs/cycle', 'vs (a)', 'vs (c)');
$ratio = static fn (float $us, ?float $base): string => $base === null ? '-' : sprintf('%.2fx', $us / $base);
foreach ($medians as $name => $us) {
    printf("%-40s %10.2f %8s %8s\n", $name, $us, $ratio($us, $floor), $ratio($us, $symfony));
}
foreach ([...$notes, ...array_map(static fn (string $n, string $why): string => "$n failed: $why", array_keys($bench->broken), $bench->broken)] as $note) {
    echo $note, "\n";
}
foreach ($bench->failures as $name => $failed) {
    if ($failed > 0) {
        echo "$name: $failed acquires refused\n";
    }
}
