<?php

/*
 * Memory growth of Deadbolt's flock cycle: 200,000 createLock + acquire(false) + release cycles over 64 names,
 * printing memory_get_usage() (PHP's heap) and VmRSS (the whole process, Rust allocations included) after 10,000
 * and after all cycles. The two lines should match: anything that grows with the cycle count is a leak.
 *
 *   php -d extension=target/release/libdeadbolt.so bench/memory.php [cycles=200000] [names=64]
 *
 * The lock files live in a fresh directory under the system temp dir, removed at the end; nothing else is written.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/environment.php';
require_once __DIR__ . '/support/process.php';
require_once __DIR__ . '/support/scratch_dir.php';

const CHECKPOINT = 10000;

function report(string $label, array $snapshot): void
{
    printf("%-22s memory_get_usage %10d B   VmRSS %s\n", $label, $snapshot[0],
        $snapshot[1] === null ? 'n/a' : sprintf('%8d KiB', $snapshot[1]));
}

$cli = new Cli('bench/memory.php', 'usage: php bench/memory.php [cycles=200000] [names=64]');
$args = array_slice($argv, 1);
$cycles = max(CHECKPOINT, $cli->positional($args, 0, 200000, 'cycles'));
$nameCount = $cli->positional($args, 1, 64, 'names');

if (!deadboltLoaded()) {
    fwrite(STDERR, "bench/memory.php: the deadbolt extension is not loaded. Run it with\n"
        . "  php -d extension=target/release/libdeadbolt.so bench/memory.php\n");
    exit(1);
}

$names = [];
for ($i = 0; $i < $nameCount; ++$i) {
    $names[] = sprintf('bench:memory:%d', $i);
}

$factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore(scratchDir($cli, 'deadbolt-bench-memory-')));
$failed = 0;

report('start', memorySnapshot());
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
        $checkpoint = memorySnapshot();
        report(sprintf('after %d cycles', $i), $checkpoint);
    }
}
unset($lock);
$end = memorySnapshot();
report(sprintf('after %d cycles', $cycles), $end);

printf("growth from %d to %d cycles: memory_get_usage %+d B, VmRSS %s\n", CHECKPOINT, $cycles,
    $end[0] - $checkpoint[0],
    $end[1] === null || $checkpoint[1] === null ? 'n/a' : sprintf('%+d KiB', $end[1] - $checkpoint[1]));
if ($failed > 0) {
    printf("NOTE: %d acquires failed (another process using the same directory?)\n", $failed);
}
