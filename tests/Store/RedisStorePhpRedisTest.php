<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * RedisStore through a phpredis \Redis object the application lends it: scripts run through the object's methods.
 *
 * One \Redis per test, shared by the test's stores (as an application shares its connection). The cross-process
 * blocking suite does not apply: a forked child must not use its parent's \Redis connection.
 */
final class RedisStorePhpRedisTest extends RedisStoreTestCase
{
    private ?\Redis $client = null;

    protected function redisStore(float $initialTtl = 300.0): RedisStore
    {
        return new RedisStore($this->client ??= SharedRedis::newPhpRedis(), $initialTtl);
    }

    protected static function storeCode(): string
    {
        return <<<'PHP'
            $redis = new \Redis();
            $redis->connect('127.0.0.1', $vars['port']);
            $store = new Deadbolt\Store\RedisStore($redis);

            PHP;
    }

    protected function tearDown(): void
    {
        $this->client?->close();
        $this->client = null;
    }

    public function testTheClientsPrefixApplies(): void
    {
        $prefix = uniqid('deadbolt-prefix-', true).':';
        $client = SharedRedis::newPhpRedis();
        $client->setOption(\Redis::OPT_PREFIX, $prefix);
        $resource = uniqid(__METHOD__, true);
        $key = new \Deadbolt\Key($resource);

        (new RedisStore($client))->save($key);

        $this->assertSame(\Redis::REDIS_ZSET, $this->redis()->type($prefix.$resource));
        $this->assertSame(0, $this->redis()->exists($resource));
        $this->assertTrue((new RedisStore($client))->exists($key));
    }
}
