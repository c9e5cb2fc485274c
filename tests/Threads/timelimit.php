<?php
// One request of the thread suite: thread 0 holds a lock until every other thread has ended its request; each of
// those (WAITERS of them) waits for the lock in a blocking acquire under set_time_limit(1). ZTS PHP arms a timer per
// thread: each waiting thread's wait must end with PHP's "Maximum execution time" fatal error, in its own request,
// while thread 0 keeps its lock. Every step waits for the one before it (files say what happened), never on a guess
// of how long something takes.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$lock = $factory->createLock('threads-timelimit', 60);
if ($thread === 0) {
    if (!$lock->acquire()) {
        file_put_contents('php://stderr', "thread 0: the lock was not free\n");
        exit(1);
    }
    touch("$dir/held");
    while (count(glob("$dir/ended.*")) < (int) getenv('WAITERS')) {
        usleep(10_000);
    }
    if (!$lock->isAcquired()) {
        file_put_contents('php://stderr', "thread 0: lost its lock while the others timed out\n");
        exit(1);
    }
    $lock->release();
    touch("$dir/released");
    exit(0);
}
while (!file_exists("$dir/held")) {
    usleep(10_000);
}
// Shutdown functions run after the time limit's fatal error too.
register_shutdown_function(fn () => touch("$dir/ended.$thread"));
set_time_limit(1);
$lock->acquire(true);
// Reached only when the time limit did not end the wait (thread 0 releases only after every waiter ended).
touch("$dir/acquired.$thread");
