<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\LockFactory;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * What a store whose locks live in a database session promises (PostgreSqlStore, MysqlStore): a killed holder's
 * session ends with it and frees its locks at once, and a lock whose session ended is seen as lost.
 */
trait SessionLockStoreTestTrait
{
    abstract protected function getStore(): object;

    /**
     * The store's class and the DSN its constructor takes, for a holder in another process.
     *
     * @return array{class-string, string}
     */
    abstract protected function storeClassAndDsn(): array;

    public function testAKilledHoldersLockIsFreedAtOnce(): void
    {
        $resource = uniqid(__METHOD__, true);
        [$class, $dsn] = $this->storeClassAndDsn();
        $holder = PhpProcess::start(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new $vars['class']($vars['dsn'])))->createLock($vars['resource']);
            echo $lock->acquire() ? "holding\n" : "refused\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'class' => $class, 'dsn' => $dsn]);
        $this->assertSame('holding', $holder->readLine());
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertFalse($lock->acquire(false));

        posix_kill($holder->pid(), SIGKILL);
        $this->assertSame(128 + SIGKILL, $holder->waitForExit());

        // The server ends the dead process's session and frees its locks; a wait in the server gets the lock then.
        $this->assertTrue($lock->acquire(true, timeout: 60.0));
        $lock->release();
    }

    /**
     * A lock whose session ended was taken away: refresh() says it was lost, and isLost() turns true.
     */
    protected function assertLostOnRefresh(\Deadbolt\Lock $lock): void
    {
        try {
            $lock->refresh();
            $this->fail('refreshed a lock whose session ended');
        } catch (\Deadbolt\Exception\LockExpiredException $e) {
            $this->assertStringContainsString('was lost', $e->getMessage());
        }
        $this->assertTrue($lock->isLost());
    }

    /**
     * A lock on the application's connection whose session ended: nobody makes that connection again, so the lock is
     * lost (as assertLostOnRefresh() says), and taking one on the dead session is a storage failure, never a success: the
     * statement the dead session refused, as a \PDOException (as symfony/lock's store lets PDO's through).
     */
    protected function assertLostWithTheApplicationsSession(\Deadbolt\Lock $lock): void
    {
        $this->assertLostOnRefresh($lock);
        $this->assertFalse($lock->isAcquired());
        try {
            $lock->acquire(false);
            $this->fail('took a lock on a session that ended');
        } catch (\Deadbolt\Exception\LockAcquiringException $e) {
            $this->assertInstanceOf(\PDOException::class, $e->getPrevious());
            $this->assertMatchesRegularExpression('/^[0-9A-Z]{5}$/', (string) $e->getPrevious()->getCode(), 'a SQLSTATE');
        }
    }
}
