<?php
// One request of the thread suite on the in-memory store. An InMemoryStore belongs to its PHP object, so it never
// excludes another thread (docs/ARCHITECTURE.md, "PHP threads"): every thread has its own (factory.php), and all of
// them hold the one resource name at once before they start. Then CYCLES cycles on that resource, each adding one to
// this thread's own counter file under the lock, with a second Lock from the same store refused while it is held.
// The suite checks every thread's counter. In worker mode ($request = -1) the one request runs every "request"'s
// cycles.
$dir = getenv('DIR');
$factory = require __DIR__.'/factory.php';
$fail = require __DIR__.'/fail.php';
if ($request <= 0) {
    // Held by every thread together: a store shared between threads would leave all but one waiting here.
    $lock = $factory->createLock('threads-memory', 30);
    if (!$lock->acquire()) {
        $fail('another thread\'s InMemoryStore excluded this one');
    }
    touch("$dir/held.$thread");
    (require __DIR__.'/await.php')("$dir/held.*", (int) getenv('THREADS'));
    $lock->release();
    file_put_contents("$dir/counter.$thread", '0');
}
$counter = "$dir/counter.$thread";
$cycles = (int) getenv('CYCLES') * ($request === -1 ? $requests : 1);
for ($i = 0; $i < $cycles; $i++) {
    $lock = $factory->createLock('threads-memory', 30);
    if (!$lock->acquire(true)) {
        $fail('a blocking acquire returned false');
    }
    if ($factory->createLock('threads-memory', 30)->acquire()) {
        $fail('a second lock on a held resource was granted by the same store');
    }
    file_put_contents($counter, (string) ((int) file_get_contents($counter) + 1));
    $lock->release();
}
