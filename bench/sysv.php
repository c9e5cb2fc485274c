<?php

/*
 * System V semaphore cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it.
 *
 *   php -d extension=target/release/libdeadbolt.so bench/sysv.php [cycles=20000] [names=64] [rounds=5]
 *
 * Variants, measured side by side in one process:
 *   raw PHP sysvsem             sem_get + sem_acquire(non-blocking) + sem_remove, what symfony/lock's SemaphoreStore
 *                               calls: the floor for this lock from PHP
 *   symfony/lock SemaphoreStore LockFactory::createLock + acquire(false) + release (symfony/lock from Debian)
 *   Deadbolt SemaphoreStore     the same cycle through Deadbolt\LockFactory
 *
 * Each variant locks names of its own (a release removes the semaphore set, as symfony/lock's does, so every cycle
 * makes a set). After a warm-up, every round runs each variant for `cycles` cycles, the order rotating from round to
 * round; the table shows the median round per variant and ratios to the anchors.
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/cycle_rounds.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/stats.php';

const RAW = 'raw PHP sysvsem';
const SYMFONY = 'symfony/lock SemaphoreStore';
const DEADBOLT = 'Deadbolt SemaphoreStore';

$cli = new Cli('bench/sysv.php', 'usage: php bench/sysv.php [cycles=20000] [names=64] [rounds=5]');
$args = array_slice($argv, 1);
$cycles = $cli->positional($args, 0, 20000, 'cycles');
$nameCount = $cli->positional($args, 1, 64, 'names');
$rounds = $cli->positional($args, 2, 5, 'rounds');
$warmup = min($cycles, 2000);

/** @return list<string> this variant's names, apart from the other variants' and from other runs' */
$namesFor = static function (string $variant) use ($nameCount): array {
    $run = bin2hex(random_bytes(4));

    return array_map(static fn (int $i): string => "bench:sysv:$run:$variant:$i", range(0, $nameCount - 1));
};

$variants = [];
$notes = [];

if (extension_loaded('sysvsem')) {
    $rawKeys = array_map(static fn (string $n): int => unpack('i', md5($n, true))[1], $namesFor('raw'));
    $variants[RAW] = static function (int $n) use ($rawKeys, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $sem = sem_get($rawKeys[$i % $nameCount]);
            if (sem_acquire($sem, true)) {
                sem_remove($sem);
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
} else {
    $notes[] = 'PHP\'s sysvsem extension is not loaded: the raw and symfony/lock rows are missing.';
}

$symfonyAutoload = symfonyLockAutoload();
if (extension_loaded('sysvsem') && loadLibrary($symfonyAutoload)) {
    $variants[SYMFONY] = factoryCycle(
        new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\SemaphoreStore()),
        $namesFor('symfony'),
    );
} elseif (extension_loaded('sysvsem')) {
    $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set SYMFONY_LOCK_AUTOLOAD):"
        . ' its row and the ratios to it are missing.';
}

if (deadboltLoaded()) {
    $variants[DEADBOLT] = factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\SemaphoreStore()), $namesFor('deadbolt'));
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run'
        . ' php -d extension=target/release/libdeadbolt.so bench/sysv.php';
}

$bench = new CycleRounds($variants, $cycles, $rounds, $cycles);
$bench->warmUp($warmup);
$bench->measure();

printf("System V semaphore cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names,"
    . " warm-up %d\n", $cycles, $rounds, $nameCount, $warmup);
echo phpAndMachine(), "\n\n";
printCycleTable($bench, array_keys($variants), SYMFONY, RAW, 'vs raw', $notes);
printNotes($notes);
