<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Key;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\DeadboltTestCase;

final class StoreFactoryTest extends DeadboltTestCase
{
    public function testFlockUsesTheSystemTempDir(): void
    {
        $store = StoreFactory::createStore('flock');
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $path = sys_get_temp_dir().'/'.FlockFileNameTest::expectedFileName($resource);

        $this->assertInstanceOf(FlockStore::class, $store);
        try {
            $store->save($key);
            $this->assertFileExists($path);
        } finally {
            $store->delete($key);
            @unlink($path);
        }
    }

    public function testFlockWithAnAbsolutePathLocksThere(): void
    {
        $dir = $this->tempDir().'/created/by/the/store';
        $resource = uniqid(__METHOD__, true);

        $store = StoreFactory::createStore('flock://'.$dir);
        $store->save(new Key($resource));

        $this->assertInstanceOf(FlockStore::class, $store);
        $this->assertFileExists($dir.'/'.FlockFileNameTest::expectedFileName($resource));
    }

    public function testInMemory(): void
    {
        $store = StoreFactory::createStore('in-memory');

        $this->assertInstanceOf(InMemoryStore::class, $store);
    }

    public function testEachCallBuildsANewStore(): void
    {
        $this->assertNotSame(StoreFactory::createStore('in-memory'), StoreFactory::createStore('in-memory'));
    }

    /**
     * @dataProvider unsupportedConnections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('unsupportedConnections')]
    public function testAnUnsupportedConnectionIsAnInvalidArgumentNamingTheScheme(string $connection, string $scheme): void
    {
        try {
            StoreFactory::createStore($connection);
            $this->fail('createStore() accepted '.$connection);
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($scheme, $e->getMessage());
            $this->assertStringNotContainsString('s3cr3t', $e->getMessage(), 'the message must not repeat credentials');
        }
    }

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function unsupportedConnections(): iterable
    {
        yield 'zookeeper' => ['zookeeper://localhost:2181', 'zookeeper'];
        // A MemcachedStore's DSN, refused for its credentials (SASL): neither repeated.
        yield 'memcached with credentials' => ['memcached://user:s3cr3t@localhost:11211', 'memcached'];
        yield 'mongodb with credentials' => ['mongodb://admin:s3cr3t@db.example:27017/locks', 'mongodb'];
        yield 'pgsql with credentials' => ['pgsql://user:s3cr3t@localhost/app', 'pgsql'];
    }

    /**
     * @dataProvider meaninglessConnections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('meaninglessConnections')]
    public function testAConnectionWithoutSchemeIsAnInvalidArgument(string $connection): void
    {
        $this->expectException(InvalidArgumentException::class);
        StoreFactory::createStore($connection);
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function meaninglessConnections(): iterable
    {
        yield 'empty' => [''];
        yield 'a word' => ['semaphore-please'];
        yield 'flock with a relative path' => ['flock:relative/dir'];
    }
}
