<?php
// Worker-mode request of the thread suite (2 threads): a signal handler ends a blocking wait in its own thread.
// Thread 1 waits in acquire(true) for a lock thread 0 holds, under pcntl_async_signals(true) with a SIGUSR1 handler
// that throws; thread 0 sends SIGUSR1 to the process. The wait must end with the handler's exception (Deadbolt runs
// handlers between the pauses of a wait, src/interrupts.rs), holding nothing, while thread 0 keeps its lock until it
// releases it, and the lock must then be free (a Redis waiter left the queue: no release handed it the lock).
//
// Made deterministic: ZTS PHP keeps signal handlers per thread (Zend signals: SIGG(handlers)), but the kernel gives a
// process-directed signal to any thread that does not block it, the main thread first, and a thread with no handler
// of its own for it takes the default action (SIGUSR1's ends the process). The driver's main thread blocks SIGUSR1
// (driver.c), thread 0 blocks it here, so only the waiter can take it; thread 0 checks that in /proc before sending.
// It sends again until the waiter says its wait ended (one sent before the waiter entered acquire() runs its
// handler outside the wait, where it only returns), then says it stopped: the waiter ends its request only then, as
// ending it restores SIG_DFL in its thread and a signal still coming would end the process.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$await = require __DIR__.'/await.php';
$fail = require __DIR__.'/fail.php';
$lock = $factory->createLock('threads-signals', 300);

if ($thread === 0) {
    // Deadbolt's refresher starts here, before this thread blocks SIGUSR1: the refresher's threads block signals of
    // their own accord (core/src/threads.rs), else the check below counts one of them and, sent SIGUSR1, it would end
    // the process (it has no PHP handler).
    $refreshed = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore(getenv('DSN'))))
        ->createLock('threads-signals-refreshed', 30, autoRefresh: true);
    if (!$refreshed->acquire()) {
        $fail('the refreshed lock was not free');
    }
    pcntl_sigprocmask(SIG_BLOCK, [SIGUSR1]);
    if (!$lock->acquire()) {
        $fail('the lock was not free');
    }
    touch("$dir/held");
    $await("$dir/armed");
    $open = 0;
    foreach (glob('/proc/self/task/*/status') as $status) {
        preg_match('/^SigBlk:\s*([0-9a-f]+)$/m', file_get_contents($status), $blocked);
        $open += (hexdec(substr($blocked[1], -4)) >> (SIGUSR1 - 1)) & 1 ? 0 : 1;
    }
    if ($open !== 1) {
        $fail("$open threads of the process take SIGUSR1, not the waiter alone");
    }
    for ($deadline = hrtime(true) + 60_000_000_000; !file_exists("$dir/ended"); usleep(20_000)) {
        if (hrtime(true) > $deadline) {
            $fail('the waiter\'s wait did not end');
        }
        posix_kill(getmypid(), SIGUSR1);
    }
    touch("$dir/quiet");
    if (!$lock->isAcquired()) {
        $fail('lost its lock while the waiter was interrupted');
    }
    $lock->release();
    $refreshed->release();
    touch("$dir/released");
    exit(0);
}

$await("$dir/held");
pcntl_async_signals(true);
// The handler throws only inside the interrupted acquire() (a signal may come before the call, or during the checks
// after it, which acquire() too) and only until the wait has ended.
$interrupting = true;
pcntl_signal(SIGUSR1, function () use (&$interrupting): void {
    foreach ($interrupting ? debug_backtrace() : [] as $frame) {
        if (($frame['class'] ?? null) === Deadbolt\Lock::class && $frame['function'] === 'acquire') {
            throw new RuntimeException('SIGUSR1 during the wait');
        }
    }
});
touch("$dir/armed");
try {
    $got = $lock->acquire(true);
    $fail('acquire(true) returned '.var_export($got, true).' instead of ending with the handler\'s exception');
} catch (Throwable $e) {
    if ($e::class !== RuntimeException::class || $e->getMessage() !== 'SIGUSR1 during the wait') {
        $fail('the wait ended with '.$e::class.': '.$e->getMessage());
    }
}
$interrupting = false;
if ($lock->isAcquired()) {
    $fail('the waiter holds the lock after its wait was interrupted');
}
if ($factory->createLock('threads-signals', 30)->acquire()) {
    $fail('the lock was free while thread 0 held it');
}
touch("$dir/ended");
$await("$dir/quiet");
$await("$dir/released");
$after = $factory->createLock('threads-signals', 30);
if (!$after->acquire()) {
    $fail('the lock was not free after the holder released it');
}
$after->release();
touch("$dir/free");
