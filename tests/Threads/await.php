<?php
// Waits (polling every 5 ms, at most 60 s) until COUNT files match PATTERN: how the thread-suite scripts wait for
// each other (a marker file says what another thread or process has done). Gives up with status 1 (the driver's
// failure) rather than waiting on forever. Returns the closure: $await = require __DIR__.'/await.php';
$fail = require __DIR__.'/fail.php';
return function (string $pattern, int $count = 1) use ($fail): void {
    $deadline = hrtime(true) + 60_000_000_000;
    while (count(glob($pattern)) < $count) {
        if (hrtime(true) > $deadline) {
            $fail("gave up waiting for $count of $pattern");
        }
        usleep(5_000);
    }
};
