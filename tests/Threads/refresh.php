<?php
// One request of the thread suite: a lock with a short TTL kept alive by the refresher (one thread per process,
// serving every PHP thread) while this thread sleeps past several TTLs, then checked: still held, never lost, and
// refused to a second lock on the same resource.
$factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore(getenv('DSN')));
$resource = "threads-refresh-$thread-$request";
$lock = $factory->createLock($resource, 0.4, autoRefresh: true);
if (!$lock->acquire()) {
    file_put_contents('php://stderr', "thread $thread: $resource was not free\n");
    exit(1);
}
usleep(1_300_000);
$other = $factory->createLock($resource, 5);
if (!$lock->isAcquired() || $lock->isLost() || $other->acquire()) {
    file_put_contents('php://stderr', "thread $thread: $resource was not kept by the refresher\n");
    exit(1);
}
$lock->release();
if (!$other->acquire()) {
    file_put_contents('php://stderr', "thread $thread: $resource stayed held after its release\n");
    exit(1);
}
$other->release();
