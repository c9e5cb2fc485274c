<?php
// One request of the thread suite: a lock with a short TTL kept alive by the refresher (one thread per process,
// serving every PHP thread) while this thread sleeps past several TTLs, then checked: still held, never lost, and
// refused to a second lock on the same resource.
// TTL and SLEEP (seconds; 0.4 and 1.3 by default): the sleep outlasts the TTL several times over, so the lock lives
// only if the refresher extends it, each time within two thirds of a TTL. Under helgrind (some fifty times slower, on
// a loaded machine) the suite gives it a longer TTL: the refresher's slack is two thirds of it, in wall time.
$ttl = (float) (getenv('TTL') ?: 0.4);
$sleep = (float) (getenv('SLEEP') ?: 1.3);
$factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore(getenv('DSN')));
$resource = "threads-refresh-$thread-$request";
$lock = $factory->createLock($resource, $ttl, autoRefresh: true);
if (!$lock->acquire()) {
    file_put_contents('php://stderr', "thread $thread: $resource was not free\n");
    exit(1);
}
usleep((int) ($sleep * 1_000_000));
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
