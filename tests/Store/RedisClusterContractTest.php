<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\RedisClusterServers;

/**
 * RedisStore by a Redis Cluster DSN keeps the store contract and shared locks: every call routed to the node of its
 * resource's hash slot (RedisClusterDsnTest checks the routing, redirects and failures themselves).
 */
final class RedisClusterContractTest extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    private static ?RedisClusterServers $cluster = null;

    public static function setUpBeforeClass(): void
    {
        self::$cluster = RedisClusterServers::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$cluster?->stop();
        self::$cluster = null;
    }

    protected function getStore(): object
    {
        $cluster = self::$cluster ?? throw new \LogicException('the cluster is not running');

        return new RedisStore($cluster->dsn());
    }
}
