<?php

/*
 * Memory growth of Deadbolt's flock cycle: 200,000 createLock + acquire(false) + release cycles over 64 names,
 * printing memory_get_usage() (PHP's heap) and VmRSS (the whole process, Rust allocations included) after 10,000
 * and after all cycles. The two lines should match: anything that grows with the cycle count is a leak.
 *
 *   php -d extension=target/release/libdeadbolt.so bench/memory.php [cycles=200000] [names=64]
 */

declare(strict_types=1);

const CHECKPOINT = 10000;

/** Resident set size of this process in KiB, from /proc (null where there is no /proc). */
function vmRssKib(): ?int
{
    $status = @file_get_contents('/proc/self/status');
    if ($status !== false && preg_match('/^VmRSS:\s+(\d+)\s+kB/m', $status, $m) === 1) {
        return (int) $m[1];
    }

    return null;
}

/** @return array{int, ?int} */
function snapshot(): array
{
    gc_collect_cycles();

    return [memory_get_usage(), vmRssKib()];
}

function report(string $label, array $snapshot): void
{
    printf("%-22s memory_get_usage %10d B   VmRSS %s\n", $label, $snapshot[0],
        $snapshot[1] === null ? 'n/a' : sprintf('%8d KiB', $snapshot[1]));
}

$arg = static function (int $index, int $default) use ($argv): int {
    if (!isset($argv[$index])) {
        return $default;
    }
    if (!ctype_digit($argv[$index]) || (int) $argv[$index] < 1) {
        fwrite(STDERR, "usage: php bench/memory.php [cycles=200000] [names=64]\n");
        exit(2);
    }

    return (int) $argv[$index];
};
$cycles = max(CHECKPOINT, $arg(1, 200000));
$nameCount = $arg(2, 64);

if (!class_exists(Deadbolt\LockFactory::class)) {
    fwrite(STDERR, "bench/memory.php: the deadbolt extension is not loaded. Run it with\n"
        . "  php -d extension=target/release/libdeadbolt.so bench/memory.php\n");
    exit(1);
}

$names = [];
for ($i = 0; $i < $nameCount; ++$i) {
    $names[] = sprintf('bench:memory:%d', $i);
}

$dir = sys_get_temp_dir() . '/deadbolt-bench-memory-' . bin2hex(random_bytes(6));
mkdir($dir, 0700);
register_shutdown_function(static function () use ($dir): void {
    foreach (glob($dir . '/*') ?: [] as $file) {
        unlink($file);
    }
    @rmdir($dir);
});

$factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($dir));
$failed = 0;

report('start', snapshot());
$checkpoint = null;
for ($i = 1; $i <= $cycles; ++$i) {
    $lock = $factory->createLock($names[$i % $nameCount]);
    if ($lock->acquire(false)) {
        $lock->release();
    } else {
        ++$failed;
    }
    if ($i === CHECKPOINT) {
        unset($lock);
        $checkpoint = snapshot();
        report(sprintf('after %d cycles', $i), $checkpoint);
    }
}
unset($lock);
$end = snapshot();
report(sprintf('after %d cycles', $cycles), $end);

printf("growth from %d to %d cycles: memory_get_usage %+d B, VmRSS %s\n", CHECKPOINT, $cycles,
    $end[0] - $checkpoint[0],
    $end[1] === null || $checkpoint[1] === null ? 'n/a' : sprintf('%+d KiB', $end[1] - $checkpoint[1]));
if ($failed > 0) {
    printf("NOTE: %d acquires failed (another process using the same directory?)\n", $failed);
}
