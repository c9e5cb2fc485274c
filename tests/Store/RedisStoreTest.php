<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\InvalidTtlException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * RedisStore by DSN (redis://127.0.0.1:PORT): Deadbolt's own connection, one per process and DSN, a fresh one in a
 * forked child, so the cross-process blocking suite applies too.
 */
final class RedisStoreTest extends RedisStoreTestCase
{
    use BlockingSharedStoreTestTrait;
    use BlockingStoreTestTrait;

    protected function redisStore(float $initialTtl = 300.0): RedisStore
    {
        return new RedisStore(SharedRedis::dsn(), $initialTtl);
    }

    protected static function storeCode(): string
    {
        return <<<'PHP'
            $store = new Deadbolt\Store\RedisStore('redis://127.0.0.1:'.$vars['port']);

            PHP;
    }

    public function testStoreFactoryBuildsARedisStoreFromADsn(): void
    {
        $resource = uniqid(__METHOD__, true);

        $store = StoreFactory::createStore(SharedRedis::dsn());

        $this->assertInstanceOf(RedisStore::class, $store);
        $key = new Key($resource);
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->expectException(LockConflictedException::class);
        $this->redisStore()->save(new Key($resource));
    }

    public function testStoreFactoryGivesTheStoreAnInitialTtlOfFiveMinutes(): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        StoreFactory::createStore(SharedRedis::dsn())->save($key);

        $this->assertGreaterThan(240.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(300.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(300_000, $this->redis()->pttl((string) $key));
    }

    /**
     * @dataProvider clientObjects
     *
     * @param callable(): object $client
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('clientObjects')]
    public function testStoreFactoryBuildsARedisStoreFromAClientObject(callable $client): void
    {
        $resource = uniqid(__METHOD__, true);

        $store = StoreFactory::createStore($client());

        $this->assertInstanceOf(RedisStore::class, $store);
        $store->save(new Key($resource));
        $this->assertSame(\Redis::REDIS_ZSET, $this->redis()->type($resource));
    }

    /**
     * @return iterable<string, array{callable(): object}>
     */
    public static function clientObjects(): iterable
    {
        yield '\Redis' => [static fn (): \Redis => SharedRedis::newPhpRedis()];
        yield 'Predis' => [static fn (): \Predis\Client => SharedRedis::newPredis()];
    }

    /**
     * @dataProvider notConnections
     *
     * @param callable(): mixed $connection
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('notConnections')]
    public function testTheConstructorRejectsWhatIsNeitherADsnNorAClient(callable $connection): void
    {
        $this->expectException(\TypeError::class);
        new RedisStore($connection());
    }

    /**
     * @dataProvider notConnections
     *
     * @param callable(): mixed $connection
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('notConnections')]
    public function testStoreFactoryRejectsWhatIsNeitherAConnectionStringNorAClient(callable $connection): void
    {
        $this->expectException(\TypeError::class);
        StoreFactory::createStore($connection());
    }

    /**
     * @return iterable<string, array{callable(): mixed}>
     */
    public static function notConnections(): iterable
    {
        yield 'stdClass' => [static fn () => new \stdClass()];
        yield 'closure' => [static fn () => static fn () => null];
        yield 'symfony/lock RedisStore' => [static fn () => new \Symfony\Component\Lock\Store\RedisStore(SharedRedis::newPhpRedis())];
        yield 'a Deadbolt store' => [static fn () => new \Deadbolt\Store\InMemoryStore()];
        yield 'int' => [static fn () => 6379];
        yield 'null' => [static fn () => null];
        yield 'array' => [static fn () => ['host' => '127.0.0.1']];
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testTheConstructorRejectsAnInvalidInitialTtl(float $ttl): void
    {
        $this->expectException(InvalidTtlException::class);
        new RedisStore(SharedRedis::dsn(), $ttl);
    }

    /**
     * @dataProvider badDsns
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('badDsns')]
    public function testABadDsnIsAnInvalidArgumentNamingWhatIsWrong(string $suffix, string $named): void
    {
        try {
            new RedisStore(SharedRedis::dsn($suffix));
            $this->fail('RedisStore accepted '.$suffix);
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($named, $e->getMessage());
        }
    }

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function badDsns(): iterable
    {
        yield 'unknown option' => ['?bogus=1', 'bogus'];
        yield 'timeout not a number' => ['?timeout=soon', 'timeout'];
        yield 'timeout zero' => ['?timeout=0', 'timeout'];
        yield 'read_timeout negative' => ['?read_timeout=-1', 'read_timeout'];
        yield 'db not a number' => ['?db=first', 'db'];
        yield 'ca_file without TLS' => ['?ca_file=/etc/ssl/certs/ca-certificates.crt', 'ca_file'];
        yield 'password_env naming an unset variable' => ['?password_env=DEADBOLT_TEST_SURELY_UNSET', 'DEADBOLT_TEST_SURELY_UNSET'];
    }

    /**
     * @dataProvider malformedDsns
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('malformedDsns')]
    public function testAMalformedDsnIsAnInvalidArgument(string $dsn): void
    {
        $this->expectException(InvalidArgumentException::class);
        new RedisStore($dsn);
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function malformedDsns(): iterable
    {
        yield 'empty' => [''];
        yield 'not a URL' => ['localhost:6379'];
        yield 'another scheme' => ['memcached://127.0.0.1:11211'];
        yield 'neither host nor socket' => ['redis://'];
        yield 'TLS over a unix socket' => ['rediss:///var/run/redis.sock'];
        yield 'database not a number' => ['redis://127.0.0.1:6379/first'];
    }

    public function testTheConnectionIsOpenedAtTheFirstOperationNotByTheConstructor(): void
    {
        // Nothing listens on port 1: building the store and the lock must not notice.
        $store = new RedisStore('redis://127.0.0.1:1?timeout=0.5');
        $lock = (new LockFactory($store))->createLock(uniqid(__METHOD__, true));

        $this->assertFalse($lock->isExpired());
        $this->expectException(\Deadbolt\Exception\LockAcquiringException::class);
        $lock->acquire();
    }

    /**
     * @dataProvider databaseForms
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('databaseForms')]
    public function testTheDatabaseOfTheDsnIsUsed(string $suffix, int $db): void
    {
        $resource = uniqid(__METHOD__, true);
        $inspector = SharedRedis::newPhpRedis();

        (new RedisStore(SharedRedis::dsn($suffix)))->save(new Key($resource));

        $this->assertSame(0, $this->redis()->exists($resource), 'not in database 0');
        $inspector->select($db);
        $this->assertSame(\Redis::REDIS_ZSET, $inspector->type($resource));
        $inspector->close();
    }

    /**
     * @return iterable<string, array{string, int}>
     */
    public static function databaseForms(): iterable
    {
        yield 'path' => ['/3', 3];
        yield 'option' => ['?db=4', 4];
        yield 'option and timeouts' => ['/0?db=5&timeout=1.5&read_timeout=2.5', 5];
    }

    public function testLocksInDifferentDatabasesDoNotConflict(): void
    {
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);

        (new RedisStore(SharedRedis::dsn('/6')))->save($first);
        (new RedisStore(SharedRedis::dsn('/7')))->save($second);

        $this->assertTrue((new RedisStore(SharedRedis::dsn('/6')))->exists($first));
        $this->assertTrue((new RedisStore(SharedRedis::dsn('/7')))->exists($second));
    }

    public function testStoresAndFactoriesWithTheSameDsnShareOneConnection(): void
    {
        // A database of its own, so that the connections of this DSN are easy to tell apart in CLIENT LIST.
        $dsn = SharedRedis::dsn('/11');
        $stores = [new RedisStore($dsn), new RedisStore($dsn, 60.0), StoreFactory::createStore($dsn), StoreFactory::createStore($dsn)];
        foreach ($stores as $i => $store) {
            $lock = (new LockFactory($store))->createLock(uniqid(__METHOD__.$i, true), 30.0);
            $this->assertTrue($lock->acquire());
            $lock->release();
        }

        $ids = SharedRedis::clientIdsOfProcess($this->redis(), posix_getpid(), SharedRedis::port(), 11);

        $this->assertCount(1, $ids, 'one connection for every store of this DSN in this process');
        $lock = (new LockFactory(new RedisStore($dsn)))->createLock(uniqid(__METHOD__, true), 30.0);
        $lock->acquire();
        $this->assertSame($ids, SharedRedis::clientIdsOfProcess($this->redis(), posix_getpid(), SharedRedis::port(), 11), 'and it is kept');
    }
}
