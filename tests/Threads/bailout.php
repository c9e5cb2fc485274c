<?php
// One request of the thread suite: takes a lock (TTL 300 s: a lock left held would stall every later request past
// the suite's time limit), adds one to a counter, and ends its request in one of four ways: a release, exit() while
// holding, an uncaught exception while holding, or a fatal error (memory exhausted: a bailout) while holding. The
// end of each request must release what it held, in its own thread, as the end of a process would.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$lock = $factory->createLock('threads-bailout', 300);
if (!$lock->acquire(true)) {
    fwrite(STDERR, "thread $thread: a blocking acquire returned false\n");
    exit(1);
}
$counter = "$dir/counter";
file_put_contents($counter, (string) ((int) file_get_contents($counter) + 1));
switch ($request % 4) {
    case 0:
        $lock->release();
        break;
    case 1:
        exit(0);
    case 2:
        throw new RuntimeException('uncaught while holding the lock');
    case 3:
        ini_set('memory_limit', '16M');
        $waste = str_repeat('x', 64 << 20);
}
