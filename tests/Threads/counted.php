<?php
// Takes $lock (a blocking acquire) and adds one to the counter file in DIR under it; a failed acquire ends the
// request with status 1. Included by the thread-suite scripts where they count.
if (!$lock->acquire(true)) {
    file_put_contents('php://stderr', "thread $thread: a blocking acquire returned false\n");
    exit(1);
}
$counter = getenv('DIR').'/counter';
file_put_contents($counter, (string) ((int) file_get_contents($counter) + 1));
