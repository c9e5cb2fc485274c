<?php

/*
 * memcached cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it, on one memcached server.
 *
 *   DEADBOLT_MEMCACHED_PORT=11211 php -d extension=target/release/libdeadbolt.so bench/memcached.php \
 *       [cycles=10000] [names=64] [rounds=5]
 *
 * Variants, measured side by side in one process against one server (127.0.0.1:DEADBOLT_MEMCACHED_PORT):
 *   raw \Memcached add + delete  what the simplest memcached lock from PHP does: the floor (two round trips)
 *   symfony/lock MemcachedStore  LockFactory::createLock + acquire(false) + release (symfony/lock from Debian): add,
 *                                then on release a get, a cas and a delete (four round trips)
 *   Deadbolt MemcachedStore      the same cycle through Deadbolt\LockFactory (add; on release a meta get and a meta
 *                                delete compared to the CAS value: three round trips), by DSN
 *
 * Each variant locks names of its own. After a warm-up, every round runs each variant for `cycles` cycles, the order
 * rotating from round to round; the table shows the median round per variant and ratios to the anchors.
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/stats.php';

const RAW = 'raw \Memcached add + delete';
const SYMFONY = 'symfony/lock MemcachedStore';
const DEADBOLT = 'Deadbolt MemcachedStore';

$cli = new Cli('bench/memcached.php', 'usage: php bench/memcached.php [cycles=10000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 10000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 2000);
$port = (int) (getenv('DEADBOLT_MEMCACHED_PORT') ?: 11211);

/** @return list<string> this variant's names, apart from the other variants' and from other runs' */
$namesFor = static function (string $variant) use ($nameCount): array {
    $run = bin2hex(random_bytes(4));

    return array_map(static fn (int $i): string => "bench:memcached:$run:$variant:$i", range(0, $nameCount - 1));
};

$variants = [];
$notes = [];

if (extension_loaded('memcached')) {
    $memcached = new Memcached();
    $memcached->addServer('127.0.0.1', $port);
    $rawNames = $namesFor('raw');
    $token = base64_encode(random_bytes(32));
    $variants[RAW] = static function (int $n) use ($memcached, $rawNames, $nameCount, $token): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $name = $rawNames[$i % $nameCount];
            if ($memcached->add($name, $token, 300)) {
                $memcached->delete($name);
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
    $symfonyAutoload = symfonyLockAutoload();
    if (loadLibrary($symfonyAutoload)) {
        $variants[SYMFONY] = factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\MemcachedStore($memcached)),
            $namesFor('symfony'),
        );
    } else {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its row and the ratios to it are missing.';
    }
} else {
    $notes[] = 'PHP\'s memcached extension is not loaded: the raw and symfony/lock rows are missing.';
}

if (deadboltLoaded()) {
    $variants[DEADBOLT] = factoryCycle(
        new Deadbolt\LockFactory(new Deadbolt\Store\MemcachedStore("memcached://127.0.0.1:$port")),
        $namesFor('deadbolt'),
    );
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run'
        . ' php -d extension=target/release/libdeadbolt.so bench/memcached.php';
}

$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$bench->warmUp($warmup);
$bench->measure();

printf("memcached cycle (create lock + acquire non-blocking + release) on 127.0.0.1:%d: %d cycles x %d rounds over %d"
    . " names, warm-up %d\n", $port, $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";
printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);
printNotes($notes);
