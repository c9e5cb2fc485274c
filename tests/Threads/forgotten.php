<?php
// One worker-mode request of the thread suite ($request = -1): CYCLES logical requests, each taking one lock that
// every thread contends for (TTL 300 s), counting under it, and keeping it in a long-lived list as a careless
// service would; Deadbolt\Worker::endRequest() at each logical end must release it (this thread's only), or every
// other thread waits past the suite's time limit.
$factory = require __DIR__.'/factory.php';
$kept = [];
for ($i = 0; $i < (int) getenv('CYCLES'); $i++) {
    $lock = $factory->createLock('threads-forgotten', 300);
    require __DIR__.'/counted.php';
    $kept[] = $lock;
    if (($released = Deadbolt\Worker::endRequest()) !== 1) {
        $why = "the logical end of request released $released locks, not 1";
        file_put_contents('php://stderr', "thread $thread: $why\n");
        exit(1);
    }
}
