<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\PostgreSqlStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PostgreSQL advisory locks, on a private server: the store contract with shared locks and waits in the server's
 * queue (across processes), locks that never expire, a killed holder's locks freed with its session, a session the
 * server ends and a server restart seen as lost locks, fork(), StoreFactory, bad input. Interop with symfony/lock's
 * PostgreSqlStore is in tests/Interop/SymfonyPostgreSqlInteropTest.php.
 *
 * @requires extension pcntl
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PostgreSqlStoreTest extends PostgreSqlStoreTestCase
{
    protected function getStore(): object
    {
        return new PostgreSqlStore(self::$server->dsn());
    }

    public function testALockIsSymfonysAdvisoryKeyInTheHoldersSession(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertSame(['ExclusiveLock:true'], self::$server->advisoryLocks($resource));
        $other = self::$server->pdo();
        $this->assertFalse($other->query('SELECT pg_try_advisory_lock('.crc32($resource).')')->fetchColumn());

        $lock->release();
        $this->assertSame([], self::$server->advisoryLocks($resource));
        $this->assertTrue($other->query('SELECT pg_try_advisory_lock('.crc32($resource).')')->fetchColumn());
        $this->assertFalse($lock->acquire(false), 'another session holds it');
    }

    public function testOptionsGiveTheCredentialsAsSymfonyLocksDo(): void
    {
        $dsn = 'pgsql:host=127.0.0.1;port='.self::$server->port.';dbname=postgres;sslmode=disable';
        $store = new PostgreSqlStore($dsn, ['db_username' => 'postgres', 'db_password' => 'unused-with-trust']);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->assertStringNotContainsString('unused-with-trust', print_r($store, true));
    }

    public function testASessionTheServerEndsIsALostLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertTrue($lock->acquire());

        self::$server->pdo()->query("SELECT pg_terminate_backend(pid) FROM pg_locks WHERE locktype = 'advisory' AND objid = ".crc32($resource));

        // The next call finds the connection closed and answers on a new session.
        $this->assertLostOnRefresh($lock);
        $this->assertFalse($lock->isAcquired());
        $this->assertTrue((new LockFactory($this->getStore()))->createLock($resource)->acquire(false), 'free for anyone');
    }

    public function testAServerRestartIsALostLock(): void
    {
        $server = PostgresServer::start();
        $store = new PostgreSqlStore($server->dsn());
        $lock = (new LockFactory($store))->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($lock->acquire());

        $server->stop();
        try {
            $lock->isAcquired();
            $this->fail('a stopped server is a storage failure');
        } catch (LockStorageException $e) {
            $this->assertStringContainsString('PostgreSqlStore(127.0.0.1:'.$server->port.'/postgres)', $e->getMessage());
        }
        $server->startAgain();

        $this->assertLostOnRefresh($lock);
        $this->assertTrue($lock->acquire(false), 'taken again on a new session');
    }

    public function testAForkedChildHasASessionOfItsOwnAndReleasesNothing(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->getStore();
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $other = uniqid(__METHOD__, true);

        $child = $this->fork(function (Channel $parent) use ($store, $lock, $resource, $other): void {
            $this->assertFalse((new LockFactory($store))->createLock($resource)->acquire(false), 'the parent holds it');
            $mine = (new LockFactory($store))->createLock($other);
            $this->assertTrue($mine->acquire());
            $lock->release();
            $parent->send('done');
        });
        $this->assertSame('done', $child->receive());
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertSame(['ExclusiveLock:true'], self::$server->advisoryLocks($resource));
        $this->assertSame([], self::$server->advisoryLocks($other), "the child's session ended with it");
        $lock->release();
    }

    /**
     * A statement the server refuses on Deadbolt's own session is a \PDOException, as on the application's \PDO and as
     * symfony/lock's store lets PDO's through: here a wait in the server's queue that an operator cancels
     * (pg_cancel_backend: SQLSTATE 57014).
     */
    public function testAWaitTheServerCancelsIsAPdoException(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = $this->getStore();
        $held = new Key($resource);
        $holder->save($held);
        $child = $this->fork(function (Channel $parent) use ($resource): void {
            try {
                $this->getStore()->waitAndSave(new Key($resource));
                $parent->send('took the lock');
            } catch (\Throwable $e) {
                $parent->send(json_encode([$e::class, $e->getCode(), $e->errorInfo[0] ?? null, $e->getMessage()]));
            }
        });
        $waiting = "FROM pg_locks WHERE locktype = 'advisory' AND NOT granted AND objid = ".crc32($resource);
        $deadline = microtime(true) + 30;
        while (!self::$server->pdo()->query("SELECT count(*) $waiting")->fetchColumn()) {
            $this->assertLessThan($deadline, microtime(true), 'the child never queued');
            usleep(10_000);
        }
        self::$server->pdo()->query("SELECT pg_cancel_backend(pid) $waiting");

        [$class, $code, $sqlstate, $message] = json_decode($child->receive(), true);
        $this->assertSame([\PDOException::class, '57014', '57014'], [$class, $code, $sqlstate]);
        $this->assertStringStartsWith('PostgreSqlStore(', $message);
        $this->assertStringContainsString('canceling statement due to user request', $message);
        $child->wait();
        $this->assertTrue($holder->exists($held));
    }

    public function testAWaitWithADeadlineLeavesTheServersQueue(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = self::$server->pdo();
        $holder->query('SELECT pg_advisory_lock_shared('.crc32($resource).')');
        $lock = (new LockFactory($this->getStore()))->createLock($resource);

        $this->assertFalse($lock->acquire(true, timeout: 0.2));
        $this->assertSame(['ShareLock:true'], self::$server->advisoryLocks($resource), 'no waiter is left');
        $this->assertTrue($lock->acquireRead(false), 'readers share');
        $lock->release();
    }

    public function testStoreFactoryTakesSymfonysAdvisoryDsnForms(): void
    {
        $port = self::$server->port;
        // A bare pgsql: DSN is a PdoStore's (the lock_keys table), as in symfony/lock's StoreFactory.
        $this->assertInstanceOf(\Deadbolt\Store\PdoStore::class, StoreFactory::createStore(self::$server->dsn()));
        foreach (['pgsql+advisory:'.substr(self::$server->dsn(), \strlen('pgsql:')), "postgresql+advisory://postgres@127.0.0.1:$port/postgres?sslmode=disable"] as $dsn) {
            $store = StoreFactory::createStore($dsn);
            $this->assertInstanceOf(PostgreSqlStore::class, $store);
            $key = new Key(uniqid(__METHOD__, true));
            $store->save($key);
            $this->assertTrue($store->exists($key));
        }
    }

    public function testBadInputIsRefusedWithoutShowingTheDsn(): void
    {
        foreach ([
            'pgsql:host=h;password=s3cret;colour=blue' => '"colour" is not one Deadbolt knows',
            'pgsql:host=h;password=s3cret;sslmode=maybe' => 'sslmode is not one of',
            'postgresql://u:s3cret@h/db?password_env=DEADBOLT_TEST_PW' => 'both a password and password_env',
        ] as $dsn => $says) {
            try {
                new PostgreSqlStore($dsn);
                $this->fail("accepted $dsn");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($says, $e->getMessage());
                $this->assertStringNotContainsString('s3cret', $e->getMessage().$e->getTraceAsString());
            }
        }
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('Unknown PostgreSqlStore option "db_connection_options"');
        new PostgreSqlStore(self::$server->dsn(), ['db_connection_options' => []]);
    }

    /**
     * As symfony/lock's store (its own testInvalidDriver): a DSN of another database is refused at the store's first
     * use, not when it is made, so an application that builds its stores at boot but never locks keeps running. Each
     * call says so, a Lock on it too, without the DSN's password; a string with no driver name is refused at once.
     */
    public function testADsnOfAnotherDatabaseIsRefusedAtFirstUseWithoutShowingIt(): void
    {
        $store = new PostgreSqlStore('mysql://user:s3cret@127.0.0.1/app');
        $says = 'The adapter "Deadbolt\\Store\\PostgreSqlStore" does not support the "mysql" driver';
        $calls = [
            'save' => fn () => $store->save(new Key('r')),
            'saveRead' => fn () => $store->saveRead(new Key('r')),
            'waitAndSave' => fn () => $store->waitAndSave(new Key('r')),
            'exists' => fn () => $store->exists(new Key('r')),
            'delete' => fn () => $store->delete(new Key('r')),
            'putOffExpiration' => fn () => $store->putOffExpiration(new Key('r'), 10.0),
        ];
        foreach ($calls as $call => $run) {
            try {
                $run();
                $this->fail("$call passed on a mysql DSN");
            } catch (InvalidArgumentException $e) {
                $this->assertStringStartsWith($says, $e->getMessage(), $call);
                $this->assertStringNotContainsString('s3cret', $e->getMessage().$e->getTraceAsString(), $call);
            }
        }
        $this->assertStringNotContainsString('s3cret', print_r($store, true));
        try {
            (new LockFactory($store))->createLock('r')->acquire();
            $this->fail('a Lock acquired on a mysql DSN');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $this->assertInstanceOf(InvalidArgumentException::class, $e->getPrevious());
            $this->assertStringStartsWith($says, $e->getPrevious()->getMessage());
        }

        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('Invalid PostgreSQL DSN: it starts with neither pgsql: nor postgresql://');
        new PostgreSqlStore('s3cret@127.0.0.1');
    }

    public function testAServerThatIsNotThereIsAStorageFailureNamingIt(): void
    {
        $port = \Deadbolt\Tests\Support\RedisServer::freePort();
        $store = new PostgreSqlStore("pgsql:host=127.0.0.1;port=$port;user=postgres;password=s3cret;sslmode=disable");
        try {
            $store->save(new Key(uniqid(__METHOD__, true)));
            $this->fail('saved on no server');
        } catch (LockStorageException $e) {
            $this->assertStringContainsString("PostgreSqlStore(127.0.0.1:$port/postgres) cannot connect", $e->getMessage());
            $this->assertStringNotContainsString('s3cret', $e->getMessage());
        }
    }

    public function testReadLocksOfOneProcessShareOneSessionLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->getStore();
        [$a, $b, $writer] = [new Key($resource), new Key($resource), new Key($resource)];
        $store->saveRead($a);
        $store->saveRead($b);
        $this->assertSame(['ShareLock:true'], self::$server->advisoryLocks($resource));
        try {
            $store->save($writer);
            $this->fail('a writer beside readers of its own process');
        } catch (LockConflictedException) {
        }
        $store->delete($a);
        $this->assertTrue($store->exists($b));
        $store->delete($b);
        $this->assertSame([], self::$server->advisoryLocks($resource));
    }
}
