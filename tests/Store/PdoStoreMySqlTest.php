<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\MariaDbServer;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PdoStore on a private MariaDB server (pdo_mysql, what symfony/lock's PdoStore runs on MySQL and MariaDB), and
 * MySQL's own case: the application's transaction, which any DDL would commit.
 *
 * @requires extension pdo_mysql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_mysql')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PdoStoreMySqlTest extends PdoStoreServerTestCase
{
    private static ?MariaDbServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = static::startServer();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    protected static function startServer(): PostgresServer|MariaDbServer
    {
        return MariaDbServer::start();
    }

    protected function durableCommits(PostgresServer|MariaDbServer $server): void
    {
        $server->pdo()->exec('SET GLOBAL innodb_flush_log_at_trx_commit = 1');
    }

    protected static function driver(): string
    {
        return 'mysql';
    }

    protected static function dsn(): string
    {
        return self::$server->dsn();
    }

    protected function now(): string
    {
        return 'UNIX_TIMESTAMP()';
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

}
