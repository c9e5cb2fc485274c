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
 * Without the extension the Deadbolt row is left out and a note says so.
 *
 * Env: SYMFONY_LOCK_AUTOLOAD overrides the path of symfony/lock's autoloader.
 */

declare(strict_types=1);

const SYMFONY_AUTOLOAD = '/usr/share/php/Symfony/Component/Lock/autoload.php';

function usage(string $error): never
{
    fwrite(STDERR, "bench/flock.php: $error\nusage: php bench/flock.php [cycles=20000] [names=64] [rounds=5]\n");
    exit(2);
}

function positiveArg(array $argv, int $index, int $default, string $name): int
{
    if (!isset($argv[$index])) {
        return $default;
    }
    if (!ctype_digit($argv[$index]) || (int) $argv[$index] < 1) {
        usage("$name must be a positive integer, got '{$argv[$index]}'");
    }

    return (int) $argv[$index];
}

/** Resident set size of this process in KiB, from /proc (null where there is no /proc). */
function vmRssKib(): ?int
{
    $status = @file_get_contents('/proc/self/status');
    if ($status !== false && preg_match('/^VmRSS:\s+(\d+)\s+kB/m', $status, $m) === 1) {
        return (int) $m[1];
    }

    return null;
}

function removeTree(string $dir): void
{
    if (!is_dir($dir)) {
        return;
    }
    foreach (new RecursiveIteratorIterator(
        new RecursiveDirectoryIterator($dir, FilesystemIterator::SKIP_DOTS),
        RecursiveIteratorIterator::CHILD_FIRST,
    ) as $entry) {
        $entry->isDir() ? rmdir($entry->getPathname()) : unlink($entry->getPathname());
    }
    rmdir($dir);
}

function median(array $values): float
{
    sort($values);
    $n = count($values);

    return $n % 2 === 1 ? $values[intdiv($n, 2)] : ($values[$n / 2 - 1] + $values[$n / 2]) / 2;
}

/** One table row; widths count characters, not bytes (µ is two bytes in UTF-8). */
function row(string ...$cells): void
{
    $widths = [24, 9, 13, 15, 7];
    $out = [];
    foreach ($cells as $i => $cell) {
        $pad = str_repeat(' ', max(0, $widths[$i] - preg_match_all('/[^\x80-\xBF]/', $cell)));
        $out[] = $i === 0 ? $cell . $pad : $pad . $cell;
    }
    echo implode('  ', $out), "\n";
}

$cycles = positiveArg($argv, 1, 20000, 'cycles');
$nameCount = positiveArg($argv, 2, 64, 'names');
$rounds = positiveArg($argv, 3, 5, 'rounds');
$warmup = min($cycles, 2000);

$names = [];
for ($i = 0; $i < $nameCount; ++$i) {
    $names[] = sprintf('bench:flock:%d', $i);
}

$baseDir = sys_get_temp_dir() . '/deadbolt-bench-' . bin2hex(random_bytes(6));
if (!mkdir($baseDir, 0700)) {
    usage("cannot create $baseDir");
}
register_shutdown_function('removeTree', $baseDir);

/*
 * Each variant is a closure running N cycles and returning the number of failed acquires (always 0 when the
 * machine is quiet: the names are released before they come round again). Each gets its own directory.
 */
$variants = [];

$rawDir = "$baseDir/raw";
mkdir($rawDir, 0700);
$rawPaths = array_map(static fn (string $n): string => sprintf('%s/%s.lock', $rawDir, md5($n)), $names);
$variants['raw PHP flock'] = static function (int $n) use ($rawPaths, $nameCount): int {
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

$notes = [];
$symfonyAutoload = getenv('SYMFONY_LOCK_AUTOLOAD') ?: SYMFONY_AUTOLOAD;
if (is_file($symfonyAutoload)) {
    require_once $symfonyAutoload;
    $symfonyDir = "$baseDir/symfony";
    $symfonyFactory = new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\FlockStore($symfonyDir));
    $variants['symfony/lock FlockStore'] = static function (int $n) use ($symfonyFactory, $names, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $symfonyFactory->createLock($names[$i % $nameCount]);
            if ($lock->acquire(false)) {
                $lock->release();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
} else {
    $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set SYMFONY_LOCK_AUTOLOAD):"
        . ' its row and the ratios to it are missing.';
}

$deadbolt = 'Deadbolt FlockStore';
if (class_exists(Deadbolt\LockFactory::class)) {
    $deadboltDir = "$baseDir/deadbolt";
    $deadboltFactory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($deadboltDir));
    $variants[$deadbolt] = static function (int $n) use ($deadboltFactory, $names, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $deadboltFactory->createLock($names[$i % $nameCount]);
            if ($lock->acquire(false)) {
                $lock->release();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured. Run `make bench`, or'
        . ' php -d extension=target/release/libdeadbolt.so bench/flock.php';
}

$memory = [];
$samples = array_fill_keys(array_keys($variants), []);
$failures = array_fill_keys(array_keys($variants), 0);
$order = array_keys($variants);

foreach ($order as $name) {
    if ($name === $deadbolt) {
        gc_collect_cycles();
        $memory['before'] = [memory_get_usage(), vmRssKib()];
    }
    $failures[$name] += $variants[$name]($warmup);
}

for ($round = 0; $round < $rounds; ++$round) {
    $rotated = array_merge(array_slice($order, $round % count($order)), array_slice($order, 0, $round % count($order)));
    foreach ($rotated as $name) {
        $t0 = hrtime(true);
        $failures[$name] += $variants[$name]($cycles);
        $samples[$name][] = (hrtime(true) - $t0) / 1e3 / $cycles;
    }
}

if (isset($variants[$deadbolt])) {
    gc_collect_cycles();
    $memory['after'] = [memory_get_usage(), vmRssKib()];
}

$medians = array_map('median', $samples);
$rawUs = $medians['raw PHP flock'];
$symfonyUs = $medians['symfony/lock FlockStore'] ?? null;

printf("flock cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names, warm-up %d\n",
    $cycles, $rounds, $nameCount, $warmup);
printf("PHP %s, %s, %s\n\n", PHP_VERSION, php_uname('s') . ' ' . php_uname('r') . ' ' . php_uname('m'),
    extension_loaded('Zend OPcache') && ini_get('opcache.enable_cli') ? 'opcache on' : 'opcache off (CLI)');

row('variant', 'µs/cycle', 'min..max', 'vs symfony/lock', 'vs raw');
row(str_repeat('-', 24), str_repeat('-', 9), str_repeat('-', 13), str_repeat('-', 15), str_repeat('-', 7));
foreach ($order as $name) {
    row(
        $name,
        sprintf('%.2f', $medians[$name]),
        sprintf('%.2f..%.2f', min($samples[$name]), max($samples[$name])),
        $symfonyUs === null ? '-' : sprintf('%.2fx', $medians[$name] / $symfonyUs),
        sprintf('%.2fx', $medians[$name] / $rawUs),
    );
}

foreach ($failures as $name => $count) {
    if ($count > 0) {
        $notes[] = sprintf('%s: %d acquires failed (another process using the same directory?): its time is not a'
            . ' clean cycle time.', $name, $count);
    }
}

if (isset($memory['after'])) {
    $kib = static fn (?int $v): string => $v === null ? 'n/a' : sprintf('%d KiB', $v);
    printf("\nDeadbolt memory (other variants ran in between):\n");
    printf("  before its first cycle: memory_get_usage %d B, VmRSS %s\n", $memory['before'][0], $kib($memory['before'][1]));
    printf("  after its last cycle:   memory_get_usage %d B, VmRSS %s\n", $memory['after'][0], $kib($memory['after'][1]));
    printf("  cycles run: %d\n", $warmup + $cycles * $rounds);
}

foreach ($notes as $note) {
    echo "\nNOTE: $note\n";
}
