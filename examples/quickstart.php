<?php

// The README quick start, runnable:
//   php -d extension=target/release/libdeadbolt.so examples/quickstart.php

declare(strict_types=1);

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;

$factory = new LockFactory(new FlockStore(sys_get_temp_dir()));
$lock = $factory->createLock('invoice:42', 30.0); // resource name, TTL in seconds

if (!$lock->acquire()) { // non-blocking: false when someone else holds it
    echo "invoice:42 is busy, try later\n";
    exit(0);
}

try {
    echo "invoice:42 is mine, working...\n";
    // ... the critical section ...
} finally {
    $lock->release();
}
echo "released\n";
