<?php
// One request of the thread suite: takes a lock (TTL 300 s: a lock left held would stall every later request past
// the suite's time limit), adds one to a counter, and ends its request in one of four ways: a release, exit() while
// holding, an uncaught exception while holding, or a fatal error (memory exhausted: a bailout) while holding. The
// end of each request must release what it held, in its own thread, as the end of a process would.
$factory = require __DIR__.'/factory.php';
$lock = $factory->createLock('threads-bailout', 300);
require __DIR__.'/counted.php';
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
