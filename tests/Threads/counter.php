<?php
// One request of the thread suite (run by tests/Threads/driver.c, which sets $thread, $request and $requests):
// CYCLES lock cycles on one resource, each adding one to a counter file under the lock. Threads of one process and
// processes alike must never interleave two read-increment-writes: the suite checks the total. In worker mode
// ($request = -1) the one request runs the cycles of all $requests "requests", as a long-running worker does.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$cycles = (int) getenv('CYCLES') * ($request === -1 ? $requests : 1);
$counter = "$dir/counter";
for ($i = 0; $i < $cycles; $i++) {
    $lock = $factory->createLock('threads-counter', 30);
    if (!$lock->acquire(true)) {
        fwrite(STDERR, "thread $thread: a blocking acquire returned false\n");
        exit(1);
    }
    $value = (int) file_get_contents($counter);
    file_put_contents($counter, (string) ($value + 1));
    $lock->release();
}
