<?php

declare(strict_types=1);

/*
 * A Redis lock handed over to a waiter, with the extension the system's php loads (the package tests run it in a
 * root where the package was installed, against that root's redis-server):
 *
 *     php scripts/handover-check.php PORT
 *
 * The holder takes the lock, starts a second php that blocks in acquire(true) on it, and releases once the waiter
 * says it is about to wait. The waiter must come back holding the lock, and only after the holder let it go: the
 * holder writes a marker file before release() and the waiter checks for it once acquire() returned. No clock is
 * read: the order is what is checked.
 */

[$script, $port] = $argv + [null, null];
$role = $argv[2] ?? 'holder';
if (!is_string($port) || !ctype_digit($port)) {
    fwrite(STDERR, "usage: php scripts/handover-check.php PORT\n");
    exit(2);
}
$dsn = "redis://127.0.0.1:$port";
$resource = 'deadbolt-handover-check';

if ('waiter' === $role) {
    $marker = $argv[3];
    $lock = (new Deadbolt\LockFactory(Deadbolt\Store\StoreFactory::createStore($dsn)))->createLock($resource, 30.0);
    echo "waiting\n";
    if (!$lock->acquire(true)) {
        fwrite(STDERR, "handover-check: the waiter's acquire(true) returned false\n");
        exit(1);
    }
    if (!is_file($marker)) {
        fwrite(STDERR, "handover-check: the waiter holds the lock before the holder released it\n");
        exit(1);
    }
    echo $lock->isAcquired() ? "handed over\n" : "not held\n";
    $lock->release();
    exit(0);
}

$marker = sys_get_temp_dir().'/deadbolt-handover-'.getmypid();
@unlink($marker);
$lock = (new Deadbolt\LockFactory(Deadbolt\Store\StoreFactory::createStore($dsn)))->createLock($resource, 30.0);
if (!$lock->acquire(false)) {
    fwrite(STDERR, "handover-check: the lock $resource is held by someone else\n");
    exit(1);
}
// DEADBOLT_SO: a build tree's .so instead of the installed one (scripts/php.sh runs it so).
$php = false !== getenv('DEADBOLT_SO') ? [PHP_BINARY, '-d', 'extension='.getenv('DEADBOLT_SO')] : [PHP_BINARY];
$waiter = proc_open([...$php, __FILE__, $port, 'waiter', $marker], [1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
if (!is_resource($waiter)) {
    fwrite(STDERR, "handover-check: could not start the waiter\n");
    exit(1);
}
$first = fgets($pipes[1]);
if ("waiting\n" !== $first) {
    fwrite(STDERR, 'handover-check: the waiter said '.var_export($first, true).': '.stream_get_contents($pipes[2])."\n");
    exit(1);
}
touch($marker);
$lock->release();
$rest = stream_get_contents($pipes[1]);
$errors = stream_get_contents($pipes[2]);
$status = proc_close($waiter);
@unlink($marker);
if (0 !== $status || "handed over\n" !== $rest) {
    fwrite(STDERR, "handover-check: the waiter ended with $status, said ".var_export($rest, true).": $errors\n");
    exit(1);
}
echo "handover-check: the waiter blocked in acquire(true) got the lock when the holder released it (Redis on port $port)\n";
