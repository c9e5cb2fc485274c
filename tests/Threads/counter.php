<?php
// One request of the thread suite (run by tests/Threads/driver.c, which sets $thread, $request and $requests):
// CYCLES lock cycles on one resource, each adding one to a counter file under the lock. Threads of one process and
// processes alike must never interleave two read-increment-writes: the suite checks the total. In worker mode
// ($request = -1) the one request runs the cycles of all $requests "requests", as a long-running worker does.
$factory = require __DIR__.'/factory.php';
$cycles = (int) getenv('CYCLES') * ($request === -1 ? $requests : 1);
for ($i = 0; $i < $cycles; $i++) {
    // One name per run (DIR is the run's own): a System V semaphore's key is the whole host's.
    $lock = $factory->createLock('threads-counter:'.getenv('DIR'), 30);
    require __DIR__.'/counted.php';
    $lock->release();
}
