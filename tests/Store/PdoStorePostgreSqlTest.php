<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PdoStore on a private PostgreSQL server, and the server's own cases: a restart mid-hold (the row survives it, and a
 * store made from a DSN connects again), a server that is not there.
 *
 * @requires extension pdo_pgsql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_pgsql')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PdoStorePostgreSqlTest extends PdoStoreTestCase
{
    private static ?PostgresServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = PostgresServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    protected static function dsn(): string
    {
        return self::$server->dsn();
    }

    protected function now(): string
    {
        return 'CAST(EXTRACT(epoch FROM NOW()) AS INT)';
    }

    public function testAServerRestartKeepsACommittedLockAndTheStoreConnectsAgain(): void
    {
        $server = PostgresServer::start();
        // The private server commits asynchronously (a throw-away server): this database waits for its commits to
        // reach the log, as a production server's default does, so the stop below cannot lose the row.
        $server->pdo()->exec('ALTER DATABASE postgres SET synchronous_commit = on');
        $lock = (new LockFactory(new PdoStore($server->dsn())))->createLock(uniqid(__METHOD__, true), 60.0);
        $this->assertTrue($lock->acquire());

        $server->stop();
        try {
            $lock->isAcquired();
            $this->fail('a stopped server is a storage failure');
        } catch (LockStorageException $e) {
            $this->assertStringStartsWith('PdoStore(pgsql: lock_keys) cannot connect', $e->getMessage());
        }
        $server->startAgain();

        // The row is in the table: the lock outlived the restart, and its holder still holds it.
        $this->assertTrue($lock->isAcquired());
        $lock->refresh();

        // A row the database lost (a failover to a replica that never had it, a restore): the holder sees it lost.
        $server->pdo()->exec('DELETE FROM lock_keys');
        $this->assertFalse($lock->isAcquired());
        try {
            $lock->refresh();
            $this->fail('a refresh revived a lock whose row is gone');
        } catch (\Deadbolt\Exception\LockConflictedException) {
        }
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    public function testTheRefresherKeepsALockOfADsnStorePastItsTtl(): void
    {
        $factory = new LockFactory($this->getStore());
        $resource = uniqid(__METHOD__, true);
        // TTL 2 s: the refresher extends every 0.67 s and each extension keeps the row at least 2 s (whole seconds,
        // plus one for the database's clock), so a refresher thread late by a second on a loaded machine still keeps it.
        $lock = $factory->createLock($resource, 2.0, autoRefresh: true);
        $this->assertTrue($lock->acquire());

        // Without the refresher the row expires 3 s after the acquire; the rival waits 6 s.
        $this->assertFalse($factory->createLock($resource)->acquire(true, timeout: 6.0));
        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertTrue($factory->createLock($resource)->acquire());
    }

    public function testADsnStoreIsAskedAlongsideTheOthersInACombinedStore(): void
    {
        $resource = uniqid(__METHOD__, true);
        $redisless = new \Deadbolt\Store\CombinedStore([$this->getStore(), new PdoStore(self::dsn())], new \Deadbolt\Strategy\UnanimousStrategy());
        $lock = (new LockFactory($redisless))->createLock($resource, 30.0, autoRefresh: true);
        $this->assertTrue($lock->acquire());
        $this->assertFalse((new LockFactory($this->getStore()))->createLock($resource)->acquire());
        $lock->release();
    }

    public function testAServerThatIsNotThereIsAStorageFailureWithoutThePassword(): void
    {
        $server = PostgresServer::start();
        $dsn = $server->dsn(';password=s3cr3t');
        $server->stop();
        $lock = (new LockFactory(new PdoStore($dsn)))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->acquire();
            $this->fail('Acquired on a server that is gone.');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $previous = $e->getPrevious();
            $this->assertInstanceOf(LockStorageException::class, $previous);
            $this->assertStringStartsWith('PdoStore(pgsql: lock_keys) cannot connect', $previous->getMessage());
            $this->assertStringNotContainsString('s3cr3t', $previous->getMessage());
        }
    }
}
