<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\MariaDbServer;

/**
 * PdoStore on a private MariaDB server (pdo_mysql, what symfony/lock's PdoStore runs on MySQL and MariaDB), and the
 * server's own cases: a restart mid-hold (the row survives it, and a store made from a DSN connects again), a server
 * that is not there.
 *
 * @requires extension pdo_mysql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_mysql')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PdoStoreMySqlTest extends PdoStoreTestCase
{
    private static ?MariaDbServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MariaDbServer::start();
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
        return 'UNIX_TIMESTAMP()';
    }

    public function testAServerRestartKeepsACommittedLockAndTheStoreConnectsAgain(): void
    {
        $server = MariaDbServer::start();
        // The private server writes its redo log once a second (a throw-away server): this session's commits reach
        // it at once, as a production server's default does, so the crash-stop below cannot lose the row.
        $server->pdo()->exec('SET GLOBAL innodb_flush_log_at_trx_commit = 1');
        $lock = (new LockFactory(new PdoStore($server->dsn())))->createLock(uniqid(__METHOD__, true), 60.0);
        $this->assertTrue($lock->acquire());

        $server->stop();
        try {
            $lock->isAcquired();
            $this->fail('a stopped server is a storage failure');
        } catch (LockStorageException $e) {
            $this->assertStringStartsWith('PdoStore(mysql: lock_keys) cannot connect', $e->getMessage());
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
        } catch (LockConflictedException) {
        }
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    public function testTheApplicationsTransactionIsNotCommittedByTheLock(): void
    {
        // MySQL commits a transaction at any DDL: the table exists before the transaction, and taking a lock inside
        // it runs no DDL, so the application's rollback still undoes its own write.
        $pdo = self::pdo();
        $pdo->exec('CREATE TABLE IF NOT EXISTS app_rows (id INT PRIMARY KEY)');
        $store = new PdoStore($pdo);
        $factory = new LockFactory($store);
        $this->assertTrue($factory->createLock(uniqid(__METHOD__, true))->acquire(), 'the lock table, made outside');
        $pdo->beginTransaction();
        $pdo->exec('INSERT INTO app_rows VALUES (1)');
        $this->assertTrue($factory->createLock(uniqid(__METHOD__, true))->acquire());
        $this->assertTrue($pdo->inTransaction());
        $pdo->rollBack();
        $this->assertSame(0, (int) self::pdo()->query('SELECT COUNT(*) FROM app_rows')->fetchColumn());
        self::pdo()->exec('DROP TABLE app_rows');
    }

    public function testAServerThatIsNotThereIsAStorageFailureWithoutThePassword(): void
    {
        $server = MariaDbServer::start();
        $dsn = $server->dsn(';password=s3cr3t');
        $server->stop();
        $lock = (new LockFactory(new PdoStore($dsn)))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->acquire();
            $this->fail('Acquired on a server that is gone.');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $previous = $e->getPrevious();
            $this->assertInstanceOf(LockStorageException::class, $previous);
            $this->assertStringStartsWith('PdoStore(mysql: lock_keys) cannot connect', $previous->getMessage());
            $this->assertStringNotContainsString('s3cr3t', $previous->getMessage());
        }
    }
}
