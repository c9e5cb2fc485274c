<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SentinelGroup;

/**
 * RedisStore by a Sentinel DSN keeps the store contract and shared locks on the primary the sentinels name
 * (RedisSentinelTest checks discovery and failover themselves).
 */
final class RedisSentinelContractTest extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    private static ?SentinelGroup $group = null;

    public static function setUpBeforeClass(): void
    {
        self::$group = SentinelGroup::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$group?->stop();
        self::$group = null;
    }

    protected function getStore(): object
    {
        $group = self::$group ?? throw new \LogicException('the sentinels are not running');

        return new RedisStore($group->dsn());
    }
}
