<?php
// Worker-mode request of the thread suite (4 threads): a pcntl_fork() from one thread while the others hold locks.
// Threads 1..3 each hold a lock of their own and, until thread 0 says it is done, keep taking and releasing another
// one, so that some thread is likely inside Deadbolt (holding one of its per-process mutexes) at the fork. Thread 0
// forks once all three hold. The child, a copy of thread 0 alone, must find the three locks held, take and release
// a lock of its own (a mutex a vanished thread held would hang it: thread 0 kills a child that does not end within
// 60 s), and end without releasing the parent's locks; they stay held until their threads release them, and are free
// after. Marker files in DIR say what happened.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$await = require __DIR__.'/await.php';
$fail = require __DIR__.'/fail.php';
$held = [1 => 'threads-fork-1', 2 => 'threads-fork-2', 3 => 'threads-fork-3'];

if ($thread > 0) {
    $lock = $factory->createLock($held[$thread], 300);
    if (!$lock->acquire()) {
        $fail("{$held[$thread]} was not free");
    }
    touch("$dir/held.$thread");
    for ($deadline = hrtime(true) + 120_000_000_000; !file_exists("$dir/done"); ) {
        if (hrtime(true) > $deadline) {
            $fail('thread 0 never said it was done');
        }
        $churn = $factory->createLock("threads-fork-churn-$thread", 30);
        $churn->acquire(true) && $churn->release();
    }
    // The child has ended by now: what it did must not have touched this thread's lock.
    if (!$lock->isAcquired()) {
        $fail("{$held[$thread]} was no longer held after the child ended");
    }
    $lock->release();
    touch("$dir/released.$thread");
    exit(0);
}

// However thread 0 ends, the holders stop then (not in the child, which inherits this).
$parent = posix_getpid();
register_shutdown_function(fn () => posix_getpid() === $parent && touch("$dir/done"));
$await("$dir/held.*", 3);
$pid = pcntl_fork();
if ($pid === -1) {
    $fail('pcntl_fork() failed: '.pcntl_strerror(pcntl_get_last_error()));
}
if ($pid === 0) {
    // The child: the locks inherited in memory are another process's; each must be refused to a fresh Lock.
    $wrong = [];
    foreach ($held as $resource) {
        if ($factory->createLock($resource, 30)->acquire()) {
            $wrong[] = "the child was granted $resource";
        }
    }
    $own = $factory->createLock('threads-fork-child', 30);
    if (!$own->acquire(true) || !$own->isAcquired()) {
        $wrong[] = 'the child could not take a lock of its own';
    }
    $own->release();
    // Its request's status is its exit status (driver.c).
    file_put_contents("$dir/child", $wrong ? implode("\n", $wrong) : 'ok');
    exit($wrong ? 1 : 0);
}
for ($deadline = hrtime(true) + 60_000_000_000; pcntl_waitpid($pid, $status, WNOHANG) === 0; usleep(5_000)) {
    if (hrtime(true) > $deadline) {
        posix_kill($pid, SIGKILL);
        pcntl_waitpid($pid, $status);
        $fail('the child hung (killed after 60 s)');
    }
}
if (!pcntl_wifexited($status) || pcntl_wexitstatus($status) !== 0) {
    $fail('the child ended with status '.$status);
}
if (($child = @file_get_contents("$dir/child")) !== 'ok') {
    $fail('the child reported: '.($child === false ? 'nothing' : $child));
}
foreach ($held as $resource) {
    if ($factory->createLock($resource, 30)->acquire()) {
        $fail("$resource was free after the child ended, before its thread released it");
    }
}
touch("$dir/done");
$await("$dir/released.*", 3);
foreach ($held as $resource) {
    $lock = $factory->createLock($resource, 30);
    if (!$lock->acquire()) {
        $fail("$resource stayed held after its thread released it");
    }
    $lock->release();
}
touch("$dir/free");
