<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * RedisStore by a unix socket DSN (redis:///path/to/redis.sock), on the socket the suite's redis-server listens on.
 */
final class RedisStoreUnixSocketTest extends RedisStoreTestCase
{
    use BlockingSharedStoreTestTrait;
    use BlockingStoreTestTrait;

    protected function redisStore(float $initialTtl = 300.0): RedisStore
    {
        return new RedisStore('redis://'.SharedRedis::socket(), $initialTtl);
    }

    protected static function storeCode(): string
    {
        return <<<'PHP'
            $store = new Deadbolt\Store\RedisStore('redis://'.$vars['socket']);

            PHP;
    }

    protected function childVars(array $vars = []): array
    {
        return parent::childVars($vars) + ['socket' => SharedRedis::socket()];
    }

    public function testTheSocketAndTheTcpPortAreOneServer(): void
    {
        $resource = uniqid(__METHOD__, true);
        $this->redisStore()->save(new Key($resource));

        $this->expectException(\Deadbolt\Exception\LockConflictedException::class);
        (new RedisStore(SharedRedis::dsn()))->save(new Key($resource));
    }

    public function testTheDbOptionSelectsTheDatabase(): void
    {
        $resource = uniqid(__METHOD__, true);
        $inspector = SharedRedis::newPhpRedis();

        (new RedisStore('redis://'.SharedRedis::socket().'?db=2'))->save(new Key($resource));

        $this->assertSame(0, $this->redis()->exists($resource));
        $inspector->select(2);
        $this->assertSame(\Redis::REDIS_ZSET, $inspector->type($resource));
        $inspector->close();
    }
}
