<?php
// How a thread-suite script reports a failed check: a line on stderr naming its thread, then status 1 (the driver's
// failure). Returns the closure: $fail = require __DIR__.'/fail.php';
return function (string $why) use ($thread): never {
    file_put_contents('php://stderr', "thread $thread: $why\n");
    exit(1);
};
