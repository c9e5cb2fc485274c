<?php

/*
 * flock cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it.
 *
 *   php -d extension=target/release/libdeadbolt.so bench/flock.php [cycles=20000] [names=64] [rounds=5]
 *
 * Variants, measured side by side in one process:
 *   raw PHP flock          fopen + flock(LOCK_EX|LOCK_NB) + flock(LOCK_UN) + fclose: the floor for a file lock from PHP
 *   symfony/lock FlockStore  LockFactory::createLock + acquire(false) + release (symfony/lock 5.4 from Debian)
 *   Deadbolt FlockStore      the same cycle through Deadbolt\LockFactory
 *
 * After a warm-up, every round runs each variant for `cycles` cycles; the order rotates from round to round so that
 * machine noise hits all variants alike. The table shows the median round per variant and ratios to the anchors.
 * Without the extension the Deadbolt row is left out and a note says so. The lock files live in a fresh directory
 * under the system temp dir, removed at the end; nothing else is written.
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/process.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/scratch_dir.php';
require_once __DIR__ . '/support/stats.php';

const RAW = 'raw PHP flock';
const SYMFONY = 'symfony/lock FlockStore';
const DEADBOLT = 'Deadbolt FlockStore';

$cli = new Cli('bench/flock.php', 'usage: php bench/flock.php [cycles=20000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 20000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 2000);

$names = [];
for ($i = 0; $i < $nameCount; ++$i) {
    $names[] = sprintf('bench:flock:%d', $i);
}
$baseDir = scratchDir($cli, 'deadbolt-bench-');

/*
 * Each variant is a closure running N cycles and returning the number of failed acquires (always 0 when the
 * machine is quiet: the names are released before they come round again). Each gets its own directory.
 */
$variants = [];
$notes = [];

$rawDir = "$baseDir/raw";
mkdir($rawDir, 0700);
$rawPaths = array_map(static fn (string $n): string => sprintf('%s/%s.lock', $rawDir, md5($n)), $names);
$variants[RAW] = static function (int $n) use ($rawPaths, $nameCount): int {
    $failed = 0;
    for ($i = 0; $i < $n; ++$i) {
        $h = fopen($rawPaths[$i % $nameCount], 'c');
        if (flock($h, LOCK_EX | LOCK_NB)) {
            flock($h, LOCK_UN);
        } else {
            ++$failed;
        }
        fclose($h);
    }

    return $failed;
};

$symfonyAutoload = symfonyLockAutoload();
if (loadLibrary($symfonyAutoload)) {
    $variants[SYMFONY] = factoryCycle(
        new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\FlockStore("$baseDir/symfony")),
        $names,
    );
} else {
    $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set SYMFONY_LOCK_AUTOLOAD):"
        . ' its row and the ratios to it are missing.';
}

if (deadboltLoaded()) {
    $variants[DEADBOLT] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore("$baseDir/deadbolt")), $names);
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run `make bench`, or'
        . ' php -d extension=target/release/libdeadbolt.so bench/flock.php';
}

// One slice per round: each variant runs its `cycles` cycles in one go.
$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$memory = [];
$bench->warmUp($warmup, static function (string $name) use (&$memory): void {
    if ($name === DEADBOLT) {
        $memory['before'] = memorySnapshot();
    }
});
$bench->measure();
if ($bench->has(DEADBOLT)) {
    $memory['after'] = memorySnapshot();
}

printf("flock cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names, warm-up %d\n",
    $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";

printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);

if (isset($memory['after'])) {
    printMemory('Deadbolt memory', $memory['before'], 'after its last cycle:  ', $memory['after'],
        $warmup + $cycles * $rounds);
}
printNotes($notes);
