<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\MariaDbServer;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PdoStore on a private PostgreSQL server, and PostgreSQL's own cases: the refresher on a session of Deadbolt's own
 * (a pgsql: DSN), such a store in a CombinedStore.
 *
 * @requires extension pdo_pgsql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_pgsql')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PdoStorePostgreSqlTest extends PdoStoreServerTestCase
{
    private static ?PostgresServer $server = null;

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
        return PostgresServer::start();
    }

    protected function durableCommits(PostgresServer|MariaDbServer $server): void
    {
        $server->pdo()->exec('ALTER DATABASE postgres SET synchronous_commit = on');
    }

    protected static function driver(): string
    {
        return 'pgsql';
    }

    protected static function dsn(): string
    {
        return self::$server->dsn();
    }

    protected function now(): string
    {
        return 'CAST(EXTRACT(epoch FROM NOW()) AS INT)';
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

}
