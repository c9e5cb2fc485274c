<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\MemcachedStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\MemcachedServer;

/**
 * memcached, on a private server: the store contract for exclusive locks, expiry (a killed holder's lock ends with its
 * TTL, the refresher keeps a lock alive), fork(), a server restart, the application's \Memcached, bad input. Interop
 * with symfony/lock's MemcachedStore is in tests/Interop/SymfonyMemcachedInteropTest.php.
 *
 * @requires extension memcached
 * @requires extension pcntl
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('memcached')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class MemcachedStoreTest extends StoreContractTestCase
{
    use ExpiringExclusiveStoreTestTrait;

    private static ?MemcachedServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MemcachedServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    protected function getStore(): object
    {
        return new MemcachedStore(self::$server->dsn());
    }

    public function testSaveGivesTheKeyTheInitialTtl(): void
    {
        $store = new MemcachedStore(self::$server->dsn(), 60);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $this->assertGreaterThan(50.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(60.0, $key->getRemainingLifetime());
    }

    public function testALockIsTheApplicationsItemUnderItsPrefix(): void
    {
        $memcached = self::$server->client();
        $memcached->setOption(\Memcached::OPT_PREFIX_KEY, 'app:');
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new MemcachedStore($memcached)))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $this->assertIsString($memcached->get($resource), 'the token, under the prefix');
        $this->assertFalse(self::$server->client()->get($resource), 'nothing without the prefix');
        $lock->release();
        $this->assertFalse($memcached->get($resource));
    }

    public function testTheRefresherKeepsALockPastItsTtl(): void
    {
        $factory = new LockFactory($this->getStore());
        $resource = uniqid(__METHOD__, true);
        // TTL 2 s: the refresher extends every 0.67 s and each extension keeps the item at least 2 s (whole seconds,
        // plus one for memcached's clock), so a refresher thread late by a second on a loaded machine still keeps it.
        $lock = $factory->createLock($resource, 2.0, autoRefresh: true);
        $this->assertTrue($lock->acquire());

        // Without the refresher the item is gone 3 s after the acquire; the rival waits 5 s.
        $this->assertFalse($factory->createLock($resource)->acquire(true, timeout: 5.0));
        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertTrue($factory->createLock($resource)->acquire());
    }

    public function testAServerRestartIsSeenAsALostLock(): void
    {
        $server = MemcachedServer::start();
        $lock = (new LockFactory(new MemcachedStore($server->dsn())))->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($lock->acquire());

        $server->restart();

        $this->assertFalse($this->isAcquiredOnceReconnected($lock));
        $this->expectException(LockConflictedException::class);
        $lock->refresh();
    }

    public function testAServerThatIsGoneIsAStorageFailureNamingTheStore(): void
    {
        $server = MemcachedServer::start();
        $port = $server->port;
        $server->stop();
        $lock = (new LockFactory(new MemcachedStore($server->dsn())))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->acquire();
            $this->fail('Acquired on a server that is gone.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            $this->assertStringStartsWith("MemcachedStore(127.0.0.1:$port) failed to take", $e->getPrevious()->getMessage());
        }
    }

    public function testTheApplicationsMemcachedMustHaveOneTcpServer(): void
    {
        try {
            new MemcachedStore(new \Memcached());
            $this->fail('A \Memcached without a server was taken.');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('must have exactly one server', $e->getMessage());
        }
        $two = self::$server->client();
        $two->addServer('127.0.0.1', self::$server->port + 1);
        $this->expectException(InvalidArgumentException::class);
        new MemcachedStore($two);
    }

    public function testBadArgumentsAreRefusedClearlyAndWithoutSecrets(): void
    {
        foreach (['memcached://user:s3cret@127.0.0.1', 'memcached:///run/memcached.sock', 'memcached://127.0.0.1?weight=2'] as $dsn) {
            try {
                new MemcachedStore($dsn);
                $this->fail("$dsn was taken.");
            } catch (InvalidArgumentException $e) {
                $this->assertStringStartsWith('Invalid memcached DSN', $e->getMessage());
                $this->assertStringNotContainsString('s3cret', $e->getMessage());
            }
        }
        try {
            new MemcachedStore(self::$server->dsn(), 0.5);
            $this->fail('An initial TTL under a second was taken.');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('at least 1 second', $e->getMessage());
        }
        $this->expectException(\TypeError::class);
        $this->expectExceptionMessage('Argument #1 ($memcached) must be of type Memcached|string, stdClass given');
        new MemcachedStore(new \stdClass());
    }

    public function testANameMemcachedCannotTakeIsRefusedNamingTheRule(): void
    {
        $lock = (new LockFactory($this->getStore()))->createLock(str_repeat('x', 251));
        try {
            $lock->acquire();
            $this->fail('A 251-byte key was taken.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(InvalidArgumentException::class, $e->getPrevious());
            $this->assertStringContainsString('cannot be a memcached key', $e->getPrevious()->getMessage());
        }
    }

    public function testStoreFactoryTakesTheDsnAndTheApplicationsMemcached(): void
    {
        $resource = uniqid(__METHOD__, true);
        $byDsn = StoreFactory::createStore(self::$server->dsn());
        $byClient = StoreFactory::createStore(self::$server->client());
        $this->assertInstanceOf(MemcachedStore::class, $byDsn);
        $this->assertInstanceOf(MemcachedStore::class, $byClient);

        $byDsn->save(new Key($resource));
        $this->expectException(LockConflictedException::class);
        $byClient->save(new Key($resource));
    }

    /**
     * isAcquired() after the server came back: the first call may meet the dead connection (a storage failure,
     * never "held"); the next one has a new connection.
     */
    private function isAcquiredOnceReconnected(\Deadbolt\Lock $lock): bool
    {
        try {
            return $lock->isAcquired();
        } catch (\Deadbolt\Exception\LockExceptionInterface) {
            return $lock->isAcquired();
        }
    }
}
