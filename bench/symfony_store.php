<?php

/*
 * Deadbolt's engine on a symfony/lock store (the bridge's SymfonyStore), against symfony/lock's own Lock on the same
 * store: what the adapter and the engine cost per cycle (create a lock, acquire it non-blocking, release it).
 *
 *   php -d extension=target/release/libdeadbolt.so bench/symfony_store.php [cycles=5000] [names=64] [rounds=5]
 *
 * Stores: symfony/lock's PdoStore on an SQLite file in WAL mode without fsync (needs pdo_sqlite: php-sqlite3), and
 * its FlockStore beside
 * Deadbolt's native FlockStore (what the native store saves over the adapter). After a warm-up, every round runs each
 * variant for `cycles` cycles, the order rotating; the tables show the median round and ratios to symfony/lock on the
 * same store. The files live in a fresh directory under the system temp dir, removed at the end.
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/scratch_dir.php';
require_once __DIR__ . '/support/stats.php';

spl_autoload_register(static function (string $class): void {
    $prefix = 'Deadbolt\\Bridge\\Symfony\\';
    if (str_starts_with($class, $prefix)) {
        require __DIR__ . '/../php/src/' . str_replace('\\', '/', substr($class, strlen($prefix))) . '.php';
    }
});

const SYMFONY_PDO = 'symfony/lock PdoStore';
const DEADBOLT_PDO = 'Deadbolt on PdoStore';
const SYMFONY_FLOCK = 'symfony/lock FlockStore';
const DEADBOLT_ON_FLOCK = 'Deadbolt on FlockStore';
const DEADBOLT_FLOCK = 'Deadbolt FlockStore (native)';

$cli = new Cli('bench/symfony_store.php', 'usage: php bench/symfony_store.php [cycles=5000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 5000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 1000);
$names = array_map(static fn (int $i): string => "bench:symfony-store:$i", range(0, $nameCount - 1));
$dir = scratchDir($cli, 'deadbolt-bench-');

$symfonyAutoload = symfonyLockAutoload();
if (!loadLibrary($symfonyAutoload) || !deadboltLoaded()) {
    fwrite(STDERR, "bench/symfony_store.php needs symfony/lock ($symfonyAutoload) and the deadbolt extension\n");
    exit(2);
}

$variants = [];
$notes = [];
if (extension_loaded('pdo_sqlite')) {
    $pdo = static function (string $name) use ($dir): Symfony\Component\Lock\Store\PdoStore {
        // WAL without fsync: the table's cost in CPU, not the disk's (a synchronous SQLite commit is milliseconds).
        $connection = new PDO("sqlite:$dir/$name.sqlite", null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
        $connection->exec('PRAGMA journal_mode=WAL; PRAGMA synchronous=OFF');
        $store = new Symfony\Component\Lock\Store\PdoStore($connection);
        $store->createTable();

        return $store;
    };
    $variants[SYMFONY_PDO] = factoryCycle(new Symfony\Component\Lock\LockFactory($pdo('symfony')), $names);
    $variants[DEADBOLT_PDO] = factoryCycle(
        new Deadbolt\LockFactory(new Deadbolt\Bridge\Symfony\SymfonyStore($pdo('deadbolt'))),
        $names,
    );
} else {
    $notes[] = 'pdo_sqlite is not loaded (apt install php-sqlite3): the PdoStore rows are missing.';
}
foreach (['symfony', 'adapter', 'native'] as $sub) {
    mkdir("$dir/$sub");
}
$variants[SYMFONY_FLOCK] = factoryCycle(
    new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\FlockStore("$dir/symfony")),
    $names,
);
$variants[DEADBOLT_ON_FLOCK] = factoryCycle(
    new Deadbolt\LockFactory(new Deadbolt\Bridge\Symfony\SymfonyStore(
        new Symfony\Component\Lock\Store\FlockStore("$dir/adapter"),
    )),
    $names,
);
$variants[DEADBOLT_FLOCK] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore("$dir/native")), $names);

$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$bench->warmUp($warmup);
$bench->measure();

printf("A symfony/lock store under Deadbolt's engine (create lock + acquire non-blocking + release): %d cycles x %d"
    . " rounds over %d names, warm-up %d\n", $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";
if (isset($variants[SYMFONY_PDO])) {
    printCycleTable($bench, [SYMFONY_PDO, DEADBOLT_PDO], SYMFONY_PDO, null, '', $notes);
    echo "\n";
}
printCycleTable($bench, [SYMFONY_FLOCK, DEADBOLT_ON_FLOCK, DEADBOLT_FLOCK], SYMFONY_FLOCK, DEADBOLT_FLOCK, 'vs native', $notes);
printNotes($notes);
