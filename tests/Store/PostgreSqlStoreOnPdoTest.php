<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\CombinedStore;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\PostgreSqlStore;
use Deadbolt\Strategy\UnanimousStrategy;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\ForkedChild;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\PostgresServer;

/**
 * PostgreSqlStore on the application's \PDO (as symfony/lock's takes one): the store contract with shared locks and
 * waits in the server's queue, on the application's own session, beside the DSN form on the same keys; the
 * application's settings and transactions left as they were; a session that ended seen as lost; a forked child kept
 * off its parent's connection; bad input.
 *
 * @requires extension pcntl
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PostgreSqlStoreOnPdoTest extends PostgreSqlStoreTestCase
{
    /** A store on a \PDO of its own: each store is a session apart, as two applications' are. */
    protected function getStore(): object
    {
        return new PostgreSqlStore(self::$server->pdo());
    }

    /**
     * Forked children end without freeing PHP's objects (an exec of true): a child that ends normally frees its copy of
     * every \PDO of the parent, whose goodbye ends the parent's session (see the test of that below).
     */
    protected function fork(callable $body): ForkedChild
    {
        return parent::fork(function (Channel $parent) use ($body): void {
            $body($parent);
            pcntl_exec('/bin/true');
        });
    }

    protected function storeInAChild(object $store): object
    {
        return $this->getStore();
    }

    /** The backend pid of the session holding symfony/lock's key for $resource, in $mode. */
    private function holderPid(string $resource, string $mode = 'ExclusiveLock'): ?int
    {
        $pid = self::$server->pdo()->query("SELECT pid FROM pg_locks WHERE locktype = 'advisory' AND granted AND objsubid = 1 AND objid = ".crc32($resource)." AND mode = '$mode'")->fetchColumn();

        return false === $pid ? null : (int) $pid;
    }

    public function testTheLockIsTakenOnTheApplicationsOwnSession(): void
    {
        $resource = uniqid(__METHOD__, true);
        $pdo = self::$server->pdo();
        $lock = (new LockFactory(new PostgreSqlStore($pdo)))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertSame((int) $pdo->query('SELECT pg_backend_pid()')->fetchColumn(), $this->holderPid($resource));

        $dsnStore = new PostgreSqlStore(self::$server->dsn());
        $this->assertFalse((new LockFactory($dsnStore))->createLock($resource)->acquire(false), 'the DSN form takes the same key');
        $lock->release();
        $this->assertNull($this->holderPid($resource));
        $this->assertTrue((new LockFactory($dsnStore))->createLock($resource)->acquire(false));
    }

    public function testAWaitLeavesTheApplicationsLockTimeoutAsItWas(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = self::$server->pdo();
        $holder->query('SELECT pg_advisory_lock('.crc32($resource).')');
        $pdo = self::$server->pdo();
        $pdo->exec("SET lock_timeout = '7s'");
        $lock = (new LockFactory(new PostgreSqlStore($pdo)))->createLock($resource);

        $this->assertFalse($lock->acquire(true, timeout: 0.3));
        $this->assertSame('7s', $pdo->query('SHOW lock_timeout')->fetchColumn());
        $this->assertSame(['ExclusiveLock:true'], self::$server->advisoryLocks($resource), 'no waiter is left');

        $holder->query('SELECT pg_advisory_unlock('.crc32($resource).')');
        $this->assertTrue($lock->acquire(true, timeout: 30.0));
        $this->assertSame('7s', $pdo->query('SHOW lock_timeout')->fetchColumn());
        $lock->release();
    }

    public function testAWaitInsideTheApplicationsTransactionDoesNotAbortIt(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = PhpProcess::start(<<<'PHP'
            $pdo = new PDO($vars['dsn'], null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
            $pdo->query('SELECT pg_advisory_lock('.crc32($vars['resource']).')');
            echo "holding\n";
            fgets(STDIN);
            $pdo->query('SELECT pg_advisory_unlock('.crc32($vars['resource']).')');
            echo "released\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'dsn' => self::$server->dsn()], withExtension: false);
        $this->assertSame('holding', $holder->readLine());
        $pdo = self::$server->pdo();
        $pdo->exec('CREATE TEMPORARY TABLE work (n int)');
        $lock = (new LockFactory(new PostgreSqlStore($pdo)))->createLock($resource);

        $pdo->beginTransaction();
        $pdo->exec('INSERT INTO work VALUES (1)');
        $this->assertFalse($lock->acquire(true, timeout: 0.3));
        $pdo->exec('INSERT INTO work VALUES (2)');
        $pdo->commit();
        $this->assertSame(2, (int) $pdo->query('SELECT count(*) FROM work')->fetchColumn(), 'the transaction committed whole');

        $pdo->beginTransaction();
        $holder->writeLine('release');
        $this->assertSame('released', $holder->readLine());
        $this->assertTrue($lock->acquire(true, timeout: 60.0), 'a wait inside a transaction polls until the lock is free');
        $pdo->commit();
        $this->assertSame((int) $pdo->query('SELECT pg_backend_pid()')->fetchColumn(), $this->holderPid($resource), 'a session lock outlives the transaction');
        $lock->release();
        $holder->closeStdin();
        $this->assertSame(0, $holder->waitForExit());
    }

    /**
     * As symfony/lock's store: the statement the application's statement_timeout cancelled is a \PDOException (SQLSTATE
     * 57014), and the wait leaves nothing behind.
     */
    public function testAStatementTimeoutOfTheApplicationEndsAWaitAsAPdoException(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = new PostgreSqlStore(self::$server->dsn());
        $held = new Key($resource);
        $holder->save($held);
        $pdo = self::$server->pdo();
        $store = new PostgreSqlStore($pdo);

        $pdo->exec('SET statement_timeout = 1');
        try {
            $store->waitAndSave(new Key($resource));
            $this->fail('waited past the statement_timeout');
        } catch (\PDOException $e) {
            $this->assertStringStartsWith('PostgreSqlStore(the application\'s \PDO) failed to', $e->getMessage());
            $this->assertStringContainsString('statement timeout', $e->getMessage());
            $this->assertSame('57014', $e->getCode());
            $this->assertSame('57014', $e->errorInfo[0]);
        }
        $pdo->exec('SET statement_timeout = 0');
        $holder->delete($held);

        $key = new Key($resource);
        $store->waitAndSave($key);
        $this->assertTrue($store->exists($key), 'nothing of the failed wait was left behind');
    }

    public function testASessionTheServerEndsIsALostLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $pdo = self::$server->pdo();
        $lock = (new LockFactory(new PostgreSqlStore($pdo)))->createLock($resource);
        $this->assertTrue($lock->acquire());

        self::$server->pdo()->query('SELECT pg_terminate_backend('.$this->holderPid($resource).')');

        $this->assertLostWithTheApplicationsSession($lock);
        $this->assertTrue((new LockFactory($this->getStore()))->createLock($resource)->acquire(false), 'free for anyone');
    }

    public function testAServerRestartIsALostLock(): void
    {
        $server = PostgresServer::start();
        $lock = (new LockFactory(new PostgreSqlStore($server->pdo())))->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($lock->acquire());

        $server->stop();
        $server->startAgain();

        $this->assertLostWithTheApplicationsSession($lock);
        $this->assertTrue((new LockFactory(new PostgreSqlStore($server->pdo())))->createLock('fresh')->acquire(false), 'a new \PDO takes locks again');
    }

    public function testAForkedChildIsKeptOffItsParentsConnection(): void
    {
        $resource = uniqid(__METHOD__, true);
        $pdo = self::$server->pdo();
        $store = new PostgreSqlStore($pdo);
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $child = $this->fork(function (Channel $parent) use ($store, $resource): void {
            try {
                $store->save(new Key($resource));
                $parent->send('saved');
            } catch (LockStorageException $e) {
                $parent->send($e->getMessage());
            }
        });
        $this->assertStringContainsString('this forked child would talk on its parent\'s connection', $child->receive());
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertSame((int) $pdo->query('SELECT pg_backend_pid()')->fetchColumn(), $this->holderPid($resource));
        $lock->release();
    }

    /**
     * PHP's own rule, whatever the store: a child that ends normally frees its copy of the parent's \PDO, whose goodbye
     * on the socket they share ends the parent's session, and with it the parent's locks. The lock is then seen lost.
     */
    public function testAChildThatEndsNormallyEndsTheParentsSessionAndTheLockIsSeenLost(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new PostgreSqlStore(self::$server->pdo())))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $child = parent::fork(function (Channel $parent): void {
            $parent->send('ending');
        });
        $this->assertSame('ending', $child->receive());
        $child->wait();

        $this->assertLostOnRefresh($lock);
        $this->assertNull($this->holderPid($resource), 'the server freed it');
    }

    public function testKeysOfOneApplicationSessionExcludeEachOther(): void
    {
        $resource = uniqid(__METHOD__, true);
        $pdo = self::$server->pdo();
        $first = new PostgreSqlStore($pdo);
        $second = new PostgreSqlStore($pdo);
        $key = new Key($resource);
        $first->save($key);
        try {
            $first->save(new Key($resource));
            $this->fail('a second key of the store took the session\'s lock');
        } catch (LockConflictedException) {
        }
        // Another store object on the same \PDO is the same session, where PostgreSQL would grant the lock again.
        try {
            $second->save(new Key($resource));
            $this->fail('a store on the same \PDO took the session\'s lock');
        } catch (LockConflictedException) {
        }
        $first->delete($key);
        $this->assertNull($this->holderPid($resource));
        $second->save($other = new Key($resource));
        $this->assertTrue($second->exists($other));
        $second->delete($other);
    }

    public function testACombinedStoreTakesItAsAMember(): void
    {
        $resource = uniqid(__METHOD__, true);
        $combined = new CombinedStore([new PostgreSqlStore(self::$server->pdo()), new FlockStore($this->tempDir())], new UnanimousStrategy());
        $lock = (new LockFactory($combined))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertFalse((new LockFactory($this->getStore()))->createLock($resource)->acquire(false));
        $lock->release();
        $this->assertNull($this->holderPid($resource));
    }

    public function testBadConnectionsAreRefusedSayingWhatToGive(): void
    {
        foreach ([
            [new \PDO('sqlite::memory:', null, null, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]), 'does not support the "sqlite" driver'],
            [new \PDO(self::$server->dsn(), null, null, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_SILENT]), 'ERRMODE_EXCEPTION'],
        ] as [$pdo, $says]) {
            try {
                new PostgreSqlStore($pdo);
                $this->fail('took a \PDO it cannot use');
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($says, $e->getMessage());
            }
        }
        $this->expectException(\TypeError::class);
        $this->expectExceptionMessage('Argument #1 ($connOrDsn) must be of type PDO|string, stdClass given');
        new PostgreSqlStore(new \stdClass());
    }
}
