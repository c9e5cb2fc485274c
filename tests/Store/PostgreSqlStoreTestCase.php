<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Store\PostgreSqlStore;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PostgreSqlStore on a private server, whatever session it runs on (each subclass: Deadbolt's own, the application's
 * \PDO): the store contract with shared locks and waits in the server's queue (across processes), locks that never
 * expire, a killed holder's locks freed with its session.
 *
 * @requires extension pcntl
 */
abstract class PostgreSqlStoreTestCase extends StoreContractTestCase
{
    use BlockingSharedStoreTestTrait;
    use BlockingStoreTestTrait;
    use NeverExpiringStoreTestTrait;
    use SessionLockStoreTestTrait;
    use SharedStoreTestTrait;

    protected static ?PostgresServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = PostgresServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    /** A holder in another process makes its store from the DSN. */
    protected function storeClassAndDsn(): array
    {
        return [PostgreSqlStore::class, self::$server->dsn()];
    }
}
