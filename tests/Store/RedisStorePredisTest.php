<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * RedisStore through a Predis client (Debian's php-predis 1.1) the application lends it.
 *
 * One client per test, shared by the test's stores. The cross-process blocking suite does not apply: a forked child
 * must not use its parent's connection.
 */
final class RedisStorePredisTest extends RedisStoreTestCase
{
    private ?\Predis\Client $client = null;

    protected function redisStore(float $initialTtl = 300.0): RedisStore
    {
        return new RedisStore($this->client ??= SharedRedis::newPredis(), $initialTtl);
    }

    protected static function storeCode(): string
    {
        return <<<'PHP'
            require_once '/usr/share/php/Predis/autoload.php';
            $store = new Deadbolt\Store\RedisStore(new \Predis\Client(['host' => '127.0.0.1', 'port' => $vars['port']]));

            PHP;
    }

    protected function tearDown(): void
    {
        $this->client?->disconnect();
        $this->client = null;
    }

    public function testTheClientsPrefixApplies(): void
    {
        $prefix = uniqid('deadbolt-prefix-', true).':';
        $client = SharedRedis::newPredis(['prefix' => $prefix]);
        $resource = uniqid(__METHOD__, true);
        $key = new \Deadbolt\Key($resource);

        // Predis 1.1's key-prefix processor uses "static::" callables, which PHP 8.2 reports as deprecated;
        // PHPUnit would turn that notice from Predis into an exception.
        $reporting = error_reporting(E_ALL & ~E_DEPRECATED);
        try {
            (new RedisStore($client))->save($key);
            $exists = (new RedisStore($client))->exists($key);
        } finally {
            error_reporting($reporting);
        }

        $this->assertSame(\Redis::REDIS_ZSET, $this->redis()->type($prefix.$resource));
        $this->assertSame(0, $this->redis()->exists($resource));
        $this->assertTrue($exists);
    }
}
