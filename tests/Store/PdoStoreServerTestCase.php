<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\MariaDbServer;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PdoStore on a database server (each subclass: PostgreSQL, MariaDB), and a server's own cases beside the contract: a
 * restart mid-hold (the row survives it, and a store made from a DSN connects again), a server that is not there.
 */
abstract class PdoStoreServerTestCase extends PdoStoreTestCase
{
    /**
     * A new private server of the database under test.
     */
    abstract protected static function startServer(): PostgresServer|MariaDbServer;

    /**
     * Makes $server's commits reach its log before they return, as a production server's default does (the private
     * servers, being throw-away, do not wait), so that a crash-stop cannot lose a committed row.
     */
    abstract protected function durableCommits(PostgresServer|MariaDbServer $server): void;

    /**
     * The PDO driver the store's messages name: "pgsql", "mysql".
     */
    abstract protected static function driver(): string;

    public function testAServerRestartKeepsACommittedLockAndTheStoreConnectsAgain(): void
    {
        $server = static::startServer();
        $this->durableCommits($server);
        $lock = (new LockFactory(new PdoStore($server->dsn())))->createLock(uniqid(__METHOD__, true), 60.0);
        $this->assertTrue($lock->acquire());

        $server->stop();
        try {
            $lock->isAcquired();
            $this->fail('a stopped server is a storage failure');
        } catch (LockStorageException $e) {
            $this->assertStringStartsWith('PdoStore('.static::driver().': lock_keys) cannot connect', $e->getMessage());
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

    public function testAServerThatIsNotThereIsAStorageFailureWithoutThePassword(): void
    {
        $server = static::startServer();
        $dsn = $server->dsn(';password=s3cr3t');
        $server->stop();
        $lock = (new LockFactory(new PdoStore($dsn)))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->acquire();
            $this->fail('Acquired on a server that is gone.');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $previous = $e->getPrevious();
            $this->assertInstanceOf(LockStorageException::class, $previous);
            $this->assertStringStartsWith('PdoStore('.static::driver().': lock_keys) cannot connect', $previous->getMessage());
            $this->assertStringNotContainsString('s3cr3t', $previous->getMessage());
        }
    }
}
