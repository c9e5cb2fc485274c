<?php

/*
 * A fresh directory under the system temp dir for the lock files and counters of one run, removed when the run
 * ends. Nothing in it is output: what a scenario keeps goes to outputDir() (environment.php).
 */

declare(strict_types=1);

require_once __DIR__ . '/cli.php';

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

/**
 * Makes <temp dir>/<$prefix><random hex> and removes it, with everything in it, when this process exits. A process
 * forked from this one exits without touching it.
 */
function scratchDir(Cli $cli, string $prefix): string
{
    $dir = sys_get_temp_dir() . '/' . $prefix . bin2hex(random_bytes(6));
    if (!mkdir($dir, 0700)) {
        $cli->fail("cannot create $dir");
    }
    $owner = getmypid();
    register_shutdown_function(static function () use ($dir, $owner): void {
        if (getmypid() === $owner) {
            removeTree($dir);
        }
    });

    return $dir;
}
