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

    /**
     * @return iterable<string, array{string}>
     */
    public static function queueingModes(): iterable
    {
        yield 'multi()' => ['multi'];
        yield 'pipeline()' => ['pipeline'];
    }

    /**
     * A client in multi() or pipeline() mode queues commands instead of running them and answers with itself: a lock
     * taken through it must fail with a storage error naming the mode, send nothing (so exec() runs no lock script
     * for nobody), and a release must not "succeed" while the key stays.
     *
     * @dataProvider queueingModes
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('queueingModes')]
    public function testAClientThatQueuesCommandsIsRefusedAndLeavesNothingBehind(string $mode): void
    {
        $client = SharedRedis::newPhpRedis();
        $store = new RedisStore($client);
        $factory = new \Deadbolt\LockFactory($store);
        $resource = uniqid(__METHOD__, true);
        $held = $factory->createLock($resource, 30.0);
        $this->assertTrue($held->acquire());

        $client->$mode();
        try {
            $store->save(new \Deadbolt\Key($resource.':other'));
            $this->fail('save() through a queueing client succeeded');
        } catch (\Deadbolt\Exception\LockStorageException $e) {
            $this->assertStringContainsString($mode.'()', $e->getMessage());
        }
        try {
            $factory->createLock($resource.':other', 30.0)->acquire();
            $this->fail('acquire() through a queueing client succeeded');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\LockStorageException::class, $e->getPrevious());
        }
        try {
            $held->release();
            $this->fail('release() through a queueing client succeeded');
        } catch (\Deadbolt\Exception\LockReleasingException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\LockStorageException::class, $e->getPrevious());
        }
        $client->exec();

        $this->assertSame(0, $this->redis()->exists($resource.':other'), 'no lock appeared at exec()');
        $this->assertSame(1, $this->redis()->exists($resource), 'the held lock is still held');
        $held->release();
        $this->assertSame(0, $this->redis()->exists($resource));
        $client->close();
    }
}
