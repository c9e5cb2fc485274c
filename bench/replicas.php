<?php

/*
 * What a lock acknowledged by replicas costs: the Redis lock cycle (createLock + acquire(false) + release) without
 * and with `replicas=1` / `replicas=majority` on the DSN, beside phpredis SET NX PX + DEL, on a primary with one
 * replica on loopback, measured side by side in one run (support/cycle_rounds.php).
 *
 *   php -d extension=target/release/libdeadbolt.so bench/replicas.php --port=PRIMARY --replica-port=REPLICA
 *       [cycles=5000] [rounds=5]
 *
 * REPLICA is an empty redis-server of its own: this makes it a replica of PRIMARY (REPLICAOF) and, at the end, a
 * primary again. `make bench` starts both.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';

const SLICE = 250;

$cli = new Cli('bench/replicas.php', 'usage: php bench/replicas.php --port=PRIMARY --replica-port=REPLICA [cycles=5000] [rounds=5]');
[$options, $positional] = $cli->arguments($argv, ['port', 'replica-port']);
[$port] = $cli->ports($options['port'] ?? null, 1, 'port');
[$replicaPort] = $cli->ports($options['replica-port'] ?? null, 1, 'replica-port');
$cycles = $cli->positional($positional, 0, 5000, 'cycles');
$rounds = $cli->positional($positional, 1, 5, 'rounds');
if (!deadboltLoaded()) {
    $cli->fail('the deadbolt extension is not loaded');
}

$replica = new Redis();
$replica->connect('127.0.0.1', $replicaPort);
$replica->rawCommand('REPLICAOF', '127.0.0.1', (string) $port);
$deadline = microtime(true) + 30;
while (!str_contains((string) $replica->rawCommand('INFO', 'replication'), 'master_link_status:up')) {
    if (microtime(true) > $deadline) {
        $cli->fail("the server on port $replicaPort never became a replica of port $port");
    }
    usleep(20_000);
}

$redis = new Redis();
$redis->connect('127.0.0.1', $port);
$deadbolt = static function (string $query) use ($port): Closure {
    $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore("redis://127.0.0.1:$port$query"));

    return static function (int $n) use ($factory): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $factory->createLock('bench:replicas');
            $lock->acquire() ? $lock->release() : ++$failed;
        }

        return $failed;
    };
};
$variants = [
    '(a) phpredis SET NX PX + DEL' => static function (int $n) use ($redis): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $redis->set('bench:replicas:raw', 't', ['NX', 'PX' => 30000]) ? $redis->del('bench:replicas:raw') : ++$failed;
        }

        return $failed;
    },
    '(e) Deadbolt by DSN' => $deadbolt(''),
    '(k) replicas=1' => $deadbolt('?replicas=1'),
    '(m) replicas=majority' => $deadbolt('?replicas=majority'),
];

$bench = new CycleRounds($variants, $cycles, $rounds, SLICE);
$bench->warmUp(min($cycles, 1000));
$bench->measure();
$medians = $bench->medians();
$replica->rawCommand('REPLICAOF', 'NO', 'ONE');

printf("Lock cycle on a primary with one replica (loopback), %d cycles x %d rounds, median of rounds\n", $cycles, $rounds);
echo phpAndMachine(), "\n";
printf("%-30s %10s %8s %8s\n", 'variant', 'µs/cycle', 'vs (a)', 'vs (e)');
foreach ($medians as $name => $us) {
    printf("%-30s %10.2f %7.2fx %7.2fx\n", $name, $us, $us / $medians['(a) phpredis SET NX PX + DEL'], $us / $medians['(e) Deadbolt by DSN']);
}
foreach ($bench->broken as $name => $why) {
    echo "$name failed: $why\n";
}
foreach ($bench->failures as $name => $failed) {
    if ($failed > 0) {
        echo "$name: $failed acquires refused\n";
    }
}
