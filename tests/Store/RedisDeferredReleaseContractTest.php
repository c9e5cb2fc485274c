<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A RedisStore by a release=deferred DSN keeps the store contract and shared locks: the store's own calls stay
 * synchronous (a Lock's release() is what defers, and RedisDeferredReleaseTest checks it, with what another
 * connection sees meanwhile).
 */
final class RedisDeferredReleaseContractTest extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    protected function getStore(): object
    {
        return new RedisStore(SharedRedis::dsn('?release=deferred'));
    }
}
