<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\ReplicatedPair;

/**
 * RedisStore with replicas=1 keeps the store contract and shared locks when its replica acknowledges every write
 * (RedisReplicasTest checks what happens when it does not).
 */
final class RedisReplicasContractTest extends StoreContractTestCase
{
    use SharedStoreTestTrait;

    private static ?ReplicatedPair $pair = null;

    public static function setUpBeforeClass(): void
    {
        self::$pair = ReplicatedPair::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$pair?->stop();
        self::$pair = null;
    }

    protected function getStore(): object
    {
        $pair = self::$pair ?? throw new \LogicException('the servers are not running');

        return new RedisStore($pair->primary->dsn('?replicas=1&replicas_timeout=5'));
    }
}
