<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\CombinedStore;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Strategy\UnanimousStrategy;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A CombinedStore keeps the store contract its members keep: here a flock store and a Redis store, both needed
 * (UnanimousStrategy). CombinedStoreTest checks the quorum itself against three independent masters.
 */
final class CombinedStoreContractTest extends StoreContractTestCase
{
    private ?string $lockDir = null;

    protected function getStore(): object
    {
        return new CombinedStore(
            [new FlockStore($this->lockDir ??= $this->tempDir()), new RedisStore(SharedRedis::dsn())],
            new UnanimousStrategy(),
        );
    }
}
