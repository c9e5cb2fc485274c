<?php

/*
 * Lock-table cycle benchmark (PdoStore): one cycle = create a lock, acquire it non-blocking, release it, on
 * symfony/lock's lock_keys table.
 *
 *   DEADBOLT_POSTGRES_PORT=5432 DEADBOLT_MYSQL_PORT=3306 php -d extension=target/release/libdeadbolt.so bench/pdo.php \
 *       [cycles=3000] [names=64] [rounds=5]
 *
 * Three databases, each measured side by side in one process: PostgreSQL (127.0.0.1:DEADBOLT_POSTGRES_PORT, user
 * postgres, trust), MariaDB/MySQL (127.0.0.1:DEADBOLT_MYSQL_PORT, database deadbolt, root without a password, as
 * scripts/mariadb-start.sh makes it), each skipped without its port, and SQLite (a file under the system's temporary
 * directory). Variants, each on a connection of its own, each on names of its own:
 *   raw PDO insert + delete       the simplest row lock from PHP, statements prepared once: the floor (two
 *                                 statements: INSERT, DELETE by id and token)
 *   symfony/lock PdoStore         LockFactory::createLock + acquire(false) + release (symfony/lock from Debian): INSERT,
 *                                 the acquire's refresh (UPDATE), on release DELETE then exists (SELECT); each
 *                                 statement prepared anew
 *   Deadbolt PdoStore (DSN)       the same cycle through Deadbolt\LockFactory: one upsert (the acquire's TTL in the
 *                                 same statement; MySQL, which has none that says whether it took the row: symfony's
 *                                 INSERT), on release DELETE; PostgreSQL on Deadbolt's own session (the refresher can
 *                                 reach it), MySQL and SQLite through PHP's \PDO
 *   Deadbolt PdoStore (\PDO)      the same over the application's \PDO (PostgreSQL only: elsewhere the DSN row is this)
 *
 * After a warm-up, every round runs each variant for `cycles` cycles, the order rotating from round to round; the
 * tables show the median round per variant and ratios to the anchors. symfony/lock and Deadbolt both keep their
 * default random prune (gcProbability 0.01).
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/stats.php';

const RAW = 'raw PDO insert + delete';
const SYMFONY = 'symfony/lock PdoStore';
const DEADBOLT_DSN = 'Deadbolt PdoStore (DSN)';
const DEADBOLT_PDO = 'Deadbolt PdoStore (\PDO)';

$cli = new Cli('bench/pdo.php', 'usage: php bench/pdo.php [cycles=3000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 3000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 500);

/** @return list<string> this variant's names, apart from the other variants' and from other runs' */
$namesFor = static function (string $variant) use ($nameCount): array {
    $run = bin2hex(random_bytes(4));

    return array_map(static fn (int $i): string => "bench:pdo:$run:$variant:$i", range(0, $nameCount - 1));
};

/** The floor: INSERT, then DELETE by id and token, prepared once on $pdo. */
$rawCycle = static function (PDO $pdo, array $names, string $now): Closure {
    $insert = $pdo->prepare("INSERT INTO lock_keys (key_id, key_token, key_expiration) VALUES (?, ?, $now + 300)");
    $delete = $pdo->prepare('DELETE FROM lock_keys WHERE key_id = ? AND key_token = ?');
    $ids = array_map(static fn (string $name): string => hash('sha256', $name), $names);
    $count = count($ids);

    return static function (int $n) use ($insert, $delete, $ids, $count): int {
        for ($i = 0; $i < $n; ++$i) {
            $token = base64_encode(random_bytes(32));
            $insert->execute([$ids[$i % $count], $token]);
            $delete->execute([$ids[$i % $count], $token]);
        }

        return 0;
    };
};

/**
 * Measures the variants on one database and prints its table.
 */
$run = static function (string $title, string $dsn, string $now, bool $overPdo) use ($rawCycle, $namesFor, $cycles, $rounds, $nameCount, $warmup): void {
    $variants = [];
    $notes = [];
    $pdo = static fn (): PDO => new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $variants[RAW] = $rawCycle($pdo(), $namesFor('raw'), $now);
    $symfonyAutoload = symfonyLockAutoload();
    if (loadLibrary($symfonyAutoload)) {
        $variants[SYMFONY] = factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\PdoStore($dsn)),
            $namesFor('symfony'),
        );
    } else {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its row and the ratios to it are missing.';
    }
    if (deadboltLoaded()) {
        $variants[DEADBOLT_DSN] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\PdoStore($dsn)), $namesFor('dsn'));
        if ($overPdo) {
            $variants[DEADBOLT_PDO] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\PdoStore($pdo())), $namesFor('pdo'));
        }
    } else {
        $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run'
            . ' php -d extension=target/release/libdeadbolt.so bench/pdo.php';
    }
    $bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
    $bench->warmUp($warmup);
    $bench->measure();
    printf("%s: lock-table cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names,"
        . " warm-up %d\n", $title, $cycles, $rounds, $nameCount, $warmup);
    printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);
    printNotes($notes);
    echo "\n";
};

echo phpAndMachine(), "\n\n";
$port = (int) (getenv('DEADBOLT_POSTGRES_PORT') ?: 0);
if ($port > 0 && extension_loaded('pdo_pgsql')) {
    $dsn = "pgsql:host=127.0.0.1;port=$port;dbname=postgres;user=postgres;sslmode=disable";
    // One table for every variant, made before any is measured.
    $pdo = new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $pdo->exec('DROP TABLE IF EXISTS lock_keys');
    // symfony/lock's DDL for PostgreSQL.
    $pdo->exec('CREATE TABLE lock_keys (key_id VARCHAR(64) NOT NULL PRIMARY KEY, key_token VARCHAR(64) NOT NULL, key_expiration INTEGER)');
    $run("PostgreSQL on 127.0.0.1:$port", $dsn, 'CAST(EXTRACT(epoch FROM NOW()) AS INT)', true);
} else {
    echo "PostgreSQL: skipped (set DEADBOLT_POSTGRES_PORT, with pdo_pgsql loaded)\n\n";
}
$port = (int) (getenv('DEADBOLT_MYSQL_PORT') ?: 0);
if ($port > 0 && extension_loaded('pdo_mysql')) {
    $dsn = "mysql:host=127.0.0.1;port=$port;dbname=deadbolt;user=root";
    $pdo = new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $pdo->exec('DROP TABLE IF EXISTS lock_keys');
    // symfony/lock's DDL for MySQL.
    $pdo->exec('CREATE TABLE lock_keys (key_id VARCHAR(64) NOT NULL PRIMARY KEY, key_token VARCHAR(44) NOT NULL, key_expiration INTEGER UNSIGNED NOT NULL) COLLATE utf8mb4_bin, ENGINE = InnoDB');
    $run("MariaDB/MySQL on 127.0.0.1:$port", $dsn, 'UNIX_TIMESTAMP()', false);
} else {
    echo "MariaDB/MySQL: skipped (set DEADBOLT_MYSQL_PORT, with pdo_mysql loaded)\n\n";
}
if (extension_loaded('pdo_sqlite')) {
    $file = tempnam(sys_get_temp_dir(), 'deadbolt-bench-');
    $dsn = 'sqlite:' . $file;
    (new PDO($dsn))->exec('CREATE TABLE lock_keys (key_id TEXT NOT NULL PRIMARY KEY, key_token TEXT NOT NULL, key_expiration INTEGER)');
    $run('SQLite file ' . $file, $dsn, "strftime('%s','now')", false);
    unlink($file);
} else {
    echo "SQLite: skipped (pdo_sqlite not loaded)\n";
}
