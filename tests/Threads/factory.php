<?php
// The LockFactory a thread-suite script uses: STORE names the store (flock in DIR, Redis at DSN, System V semaphores,
// or a new InMemoryStore: the one object this thread's locks share, which excludes no other thread).
return new Deadbolt\LockFactory(match (getenv('STORE')) {
    'flock' => new Deadbolt\Store\FlockStore(getenv('DIR')),
    'redis' => new Deadbolt\Store\RedisStore(getenv('DSN')),
    'semaphore' => new Deadbolt\Store\SemaphoreStore(),
    'memory' => new Deadbolt\Store\InMemoryStore(),
});
