<?php
// The LockFactory a thread-suite script uses: STORE names the store (flock in DIR, or Redis at DSN).
return new Deadbolt\LockFactory(match (getenv('STORE')) {
    'flock' => new Deadbolt\Store\FlockStore(getenv('DIR')),
    'redis' => new Deadbolt\Store\RedisStore(getenv('DSN')),
});
