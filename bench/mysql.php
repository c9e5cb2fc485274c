<?php

/*
 * MySQL/MariaDB user-level lock cycle benchmark (MysqlStore): one cycle = create a lock, acquire it non-blocking,
 * release it, on one server.
 *
 *   DEADBOLT_MYSQL_PORT=3306 php -d extension=target/release/libdeadbolt.so bench/mysql.php \
 *       [cycles=5000] [names=64] [rounds=5]
 *
 * Variants, measured side by side in one process against one server (127.0.0.1:DEADBOLT_MYSQL_PORT, database
 * deadbolt, root without a password, as scripts/mariadb-start.sh makes it), each on a session of its own:
 *   raw PDO GET_LOCK + RELEASE_LOCK   the simplest user-level lock from PHP, statements prepared once: the floor (two
 *                                     round trips)
 *   symfony/lock PdoStore (table)     LockFactory::createLock + acquire(false) + release on symfony/lock's lock_keys
 *                                     table (symfony/lock from Debian): what a symfony/lock user on MySQL has; its
 *                                     GET_LOCK store (MysqlStore, 8.2) is not packaged by Debian, so not measured
 *   Deadbolt MysqlStore (DSN)         the same cycle through Deadbolt\LockFactory on a \PDO of its own (GET_LOCK with
 *                                     the session check in one statement; on release RELEASE_LOCK)
 *   Deadbolt MysqlStore (\PDO)        the same over the application's \PDO
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

const RAW = 'raw PDO GET_LOCK + RELEASE_LOCK';
const SYMFONY = 'symfony/lock PdoStore (table)';
const DEADBOLT_DSN = 'Deadbolt MysqlStore (DSN)';
const DEADBOLT_PDO = 'Deadbolt MysqlStore (\PDO)';

$cli = new Cli('bench/mysql.php', 'usage: php bench/mysql.php [cycles=5000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 5000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 1000);
$port = (int) (getenv('DEADBOLT_MYSQL_PORT') ?: 3306);
$dsn = "mysql:host=127.0.0.1;port=$port;dbname=deadbolt;user=root";

/** @return list<string> this variant's names, apart from the other variants' and from other runs' */
$namesFor = static function (string $variant) use ($nameCount): array {
    $run = bin2hex(random_bytes(4));

    return array_map(static fn (int $i): string => "bench:mysql:$run:$variant:$i", range(0, $nameCount - 1));
};
$pdo = static fn (): PDO => new PDO($dsn, null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);

$variants = [];
$notes = [];

if (extension_loaded('pdo_mysql')) {
    $raw = $pdo();
    $lock = $raw->prepare('SELECT GET_LOCK(?, 0)');
    $unlock = $raw->prepare('SELECT RELEASE_LOCK(?)');
    $rawNames = array_map(static fn (string $name): string => hash('sha256', $name), $namesFor('raw'));
    $variants[RAW] = static function (int $n) use ($lock, $unlock, $rawNames, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $name = $rawNames[$i % $nameCount];
            $lock->execute([$name]);
            if (1 === (int) $lock->fetchColumn()) {
                $unlock->execute([$name]);
                $unlock->fetchColumn();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
    $symfonyAutoload = symfonyLockAutoload();
    if (loadLibrary($symfonyAutoload)) {
        $table = $pdo();
        $table->exec('DROP TABLE IF EXISTS lock_keys');
        (new Symfony\Component\Lock\Store\PdoStore($table))->createTable();
        $variants[SYMFONY] = factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\PdoStore($dsn)),
            $namesFor('symfony'),
        );
    } else {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): its row and the ratios to it are missing.';
    }
    if (deadboltLoaded()) {
        $variants[DEADBOLT_DSN] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\MysqlStore($dsn)), $namesFor('dsn'));
        $variants[DEADBOLT_PDO] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\MysqlStore($pdo())), $namesFor('pdo'));
    } else {
        $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run'
            . ' php -d extension=target/release/libdeadbolt.so bench/mysql.php';
    }
} else {
    $notes[] = 'PHP\'s pdo_mysql extension is not loaded: nothing was measured.';
}

$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$bench->warmUp($warmup);
$bench->measure();

printf("MySQL/MariaDB cycle (create lock + acquire non-blocking + release) on 127.0.0.1:%d: %d cycles x %d rounds over"
    . " %d names, warm-up %d\n", $port, $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";
printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);
printNotes($notes);
