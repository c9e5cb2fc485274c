<?php

/*
 * PostgreSQL cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it, on one PostgreSQL.
 *
 *   DEADBOLT_POSTGRES_PORT=5432 php -d extension=target/release/libdeadbolt.so bench/postgres.php \
 *       [cycles=5000] [names=64] [rounds=5]
 *
 * Variants, measured side by side in one process against one server (127.0.0.1:DEADBOLT_POSTGRES_PORT, user
 * postgres, trust), each on a session of its own:
 *   raw PDO advisory lock + unlock  what the simplest advisory lock from PHP does, statements prepared once: the
 *                                   floor (two round trips)
 *   symfony/lock PostgreSqlStore    LockFactory::createLock + acquire(false) + release (symfony/lock from Debian):
 *                                   pg_try_advisory_lock; on release a pg_locks count (exists), then pg_locks-driven
 *                                   unlocks, exclusive and shared, each until none is left (six statements, each
 *                                   prepared anew by PDO's emulation off: round trips as PDO makes them)
 *   Deadbolt PostgreSqlStore        the same cycle through Deadbolt\LockFactory (pg_try_advisory_lock; on release
 *                                   pg_advisory_unlock: two round trips on statements prepared once per session)
 *   Deadbolt PostgreSqlStore (\PDO) the same on the application's \PDO (the same two statements, through PHP's PDO)
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

const RAW = 'raw PDO advisory lock + unlock';
const SYMFONY = 'symfony/lock PostgreSqlStore';
const DEADBOLT = 'Deadbolt PostgreSqlStore';
const DEADBOLT_PDO = 'Deadbolt PostgreSqlStore (\\PDO)';

$cli = new Cli('bench/postgres.php', 'usage: php bench/postgres.php [cycles=5000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 5000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 1000);
$port = (int) (getenv('DEADBOLT_POSTGRES_PORT') ?: 5432);
$dsn = "pgsql:host=127.0.0.1;port=$port;dbname=postgres;user=postgres;sslmode=disable";

/** @return list<string> this variant's names, apart from the other variants' and from other runs' */
$namesFor = static function (string $variant) use ($nameCount): array {
    $run = bin2hex(random_bytes(4));

    return array_map(static fn (int $i): string => "bench:postgres:$run:$variant:$i", range(0, $nameCount - 1));
};

$variants = [];
$notes = [];

if (extension_loaded('pdo_pgsql')) {
    $pdo = new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $lock = $pdo->prepare('SELECT pg_try_advisory_lock(?)');
    $unlock = $pdo->prepare('SELECT pg_advisory_unlock(?)');
    $rawKeys = array_map('crc32', $namesFor('raw'));
    $variants[RAW] = static function (int $n) use ($lock, $unlock, $rawKeys, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $key = $rawKeys[$i % $nameCount];
            $lock->execute([$key]);
            if ($lock->fetchColumn()) {
                $unlock->execute([$key]);
                $unlock->fetchColumn();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
    $symfonyAutoload = symfonyLockAutoload();
    if (loadLibrary($symfonyAutoload)) {
        $variants[SYMFONY] = factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\PostgreSqlStore($dsn)),
            $namesFor('symfony'),
        );
    } else {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its row and the ratios to it are missing.';
    }
} else {
    $notes[] = 'PHP\'s pdo_pgsql extension is not loaded: the raw and symfony/lock rows are missing.';
}

if (deadboltLoaded()) {
    $variants[DEADBOLT] = factoryCycle(
        new Deadbolt\LockFactory(new Deadbolt\Store\PostgreSqlStore($dsn)),
        $namesFor('deadbolt'),
    );
    if (extension_loaded('pdo_pgsql')) {
        $variants[DEADBOLT_PDO] = factoryCycle(
            new Deadbolt\LockFactory(new Deadbolt\Store\PostgreSqlStore(new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]))),
            $namesFor('deadbolt-pdo'),
        );
    }
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run'
        . ' php -d extension=target/release/libdeadbolt.so bench/postgres.php';
}

$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$bench->warmUp($warmup);
$bench->measure();

printf("PostgreSQL cycle (create lock + acquire non-blocking + release) on 127.0.0.1:%d: %d cycles x %d rounds over %d"
    . " names, warm-up %d\n", $port, $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";
printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);
printNotes($notes);
