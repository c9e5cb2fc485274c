<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\MysqlStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\MariaDbServer;

/**
 * MySQL/MariaDB user-level locks (GET_LOCK), on a private MariaDB server: the store contract with waits in the server
 * (across processes), locks that never expire, symfony/lock 8.2's lock names (the statements its MysqlStore runs, from
 * another session), a killed holder's locks freed with its session, a session the server ends and a server restart
 * seen as lost locks, fork(), the application's \PDO and its own GET_LOCK, StoreFactory, bad input.
 *
 * @requires extension pdo_mysql
 * @requires extension pcntl
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_mysql')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class MysqlStoreTest extends StoreContractTestCase
{
    use BlockingStoreTestTrait;
    use NeverExpiringStoreTestTrait;
    use SessionLockStoreTestTrait;

    private static ?MariaDbServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MariaDbServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    protected function getStore(): object
    {
        return new MysqlStore(self::$server->dsn());
    }

    protected function storeClassAndDsn(): array
    {
        return [MysqlStore::class, self::$server->dsn()];
    }

    public function testALockIsSymfonysLockNameInTheHoldersSession(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertNotNull($this->holderOf($resource));
        // symfony/lock's MysqlStore (8.2) on another session: the name is taken.
        $symfony = self::$server->pdo();
        $this->assertSame(0, $this->tryTake($symfony, $resource));

        $lock->release();
        $this->assertNull($this->holderOf($resource));
        $this->assertSame(1, $this->tryTake($symfony, $resource));
        $this->assertFalse($lock->acquire(false), 'another session holds it');
        $symfony->query("DO RELEASE_LOCK('".hash('sha256', $resource)."')");
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    public function testACycleIsOneStatementToTakeAndOneToRelease(): void
    {
        $factory = new LockFactory($this->getStore());
        $warm = $factory->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($warm->acquire());
        $warm->release();
        $monitor = self::$server->pdo();
        $questions = static fn (): int => (int) $monitor->query("SHOW GLOBAL STATUS LIKE 'Questions'")->fetch(\PDO::FETCH_NUM)[1];

        $before = $questions();
        $lock = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertTrue($lock->acquire());
        $lock->release();
        // The server counted the two statements and the monitor's second question: the lock taken was not asked
        // about again (its TTL has nothing to extend on a lock that never expires).
        $this->assertSame(3, $questions() - $before);
    }

    public function testOptionsGiveTheCredentialsAsSymfonyLocksDo(): void
    {
        $dsn = 'mysql:host=127.0.0.1;port='.self::$server->port.';dbname=deadbolt';
        $store = new MysqlStore($dsn, ['db_username' => 'root', 'db_password' => '', 'db_connection_options' => [\PDO::ATTR_TIMEOUT => 5]]);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->assertStringContainsString('MysqlStore(127.0.0.1:'.self::$server->port.')', print_r($store, true));
    }

    public function testTheClassIsNamedAsSymfonyLocksAndAnswersToMySqlStoreToo(): void
    {
        $store = new \Deadbolt\Store\MySqlStore(self::$server->dsn());
        $this->assertSame('Deadbolt\Store\MysqlStore', $store::class);
        $this->assertInstanceOf(\Deadbolt\Store\BlockingStoreInterface::class, $store);
    }

    public function testASessionTheServerEndsIsALostLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->getStore()))->createLock($resource);
        $this->assertTrue($lock->acquire());

        self::$server->pdo()->exec('KILL '.$this->holderOf($resource));

        // The next call finds the connection gone, makes it again, and answers on the new session.
        $this->assertLostOnRefresh($lock);
        $this->assertFalse($lock->isAcquired());
        $this->assertTrue((new LockFactory($this->getStore()))->createLock($resource)->acquire(false), 'free for anyone');
    }

    public function testASessionOfTheApplicationsPdoTheServerEndsIsALostLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new MysqlStore(self::$server->pdo())))->createLock($resource);
        $this->assertTrue($lock->acquire());

        self::$server->pdo()->exec('KILL '.$this->holderOf($resource));

        // Nobody makes the application's connection again: the lock went with its session.
        $this->assertLostWithTheApplicationsSession($lock);
        $this->assertTrue((new LockFactory($this->getStore()))->createLock($resource)->acquire(false), 'free for anyone');
    }

    public function testAServerRestartIsALostLock(): void
    {
        $server = MariaDbServer::start();
        $lock = (new LockFactory(new MysqlStore($server->dsn())))->createLock(uniqid(__METHOD__, true));
        $this->assertTrue($lock->acquire());

        $server->stop();
        try {
            $lock->isAcquired();
            $this->fail('a stopped server is a storage failure');
        } catch (LockStorageException $e) {
            $this->assertStringStartsWith('MysqlStore(127.0.0.1:'.$server->port.') cannot connect', $e->getMessage());
        }
        $server->startAgain();

        $this->assertLostOnRefresh($lock);
        $this->assertTrue($lock->acquire(false), 'taken again on a new session');
        $lock->release();
    }

    public function testAForkedChildHasASessionOfItsOwnAndReleasesNothing(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->getStore();
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $session = $this->holderOf($resource);
        $other = uniqid(__METHOD__, true);

        $child = $this->fork(function (Channel $parent) use ($store, $lock, $resource, $other): void {
            $this->assertFalse((new LockFactory($store))->createLock($resource)->acquire(false), 'the parent holds it');
            $this->assertFalse($lock->isAcquired(), "the parent's lock is not the child's");
            $mine = (new LockFactory($store))->createLock($other);
            $this->assertTrue($mine->acquire());
            $lock->release();
            $parent->send('done');
        });
        $this->assertSame('done', $child->receive());
        $child->wait();

        // The child's end closed its own session, never the parent's (its copy of the parent's \PDO wrote nowhere).
        $this->assertTrue($lock->isAcquired());
        $this->assertSame($session, $this->holderOf($resource));
        $this->assertNull($this->holderOf($other), "the child's session ended with it");
        $lock->release();
    }

    public function testAWaitWithADeadlineEndsInTheServer(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = self::$server->pdo();
        $this->assertSame(1, $this->tryTake($holder, $resource));
        $lock = (new LockFactory($this->getStore()))->createLock($resource);

        $this->assertFalse($lock->acquire(true, timeout: 0.3));
        $holder->query("DO RELEASE_LOCK('".hash('sha256', $resource)."')");
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    public function testTwoKeysOfOneSessionNeverShareTheServersLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $store = $this->getStore();
        $factory = new LockFactory($store);
        $first = $factory->createLock($resource);
        $this->assertTrue($first->acquire());
        $session = $this->holderOf($resource);

        // The server would grant the session the name again: the second key's wait polls and times out instead.
        $this->assertFalse($factory->createLock($resource)->acquire(true, timeout: 0.3));
        $first->release();
        // One release freed it: the server never counted the name twice for the session.
        $this->assertNull($this->holderOf($resource));
        $this->assertNotNull($session);
    }

    public function testTheApplicationsPdoIsTheSessionOfItsLocksAndItsOwnGetLockIsRespected(): void
    {
        $pdo = self::$server->pdo();
        $store = new MysqlStore($pdo);
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($store))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertSame((string) $pdo->query('SELECT CONNECTION_ID()')->fetchColumn(), $this->holderOf($resource));
        $lock->release();

        // The application takes the name itself on its \PDO (as symfony/lock's MysqlStore on the same \PDO would):
        // the store does not take it over, though the server would grant it to the session.
        $this->assertSame(1, $this->tryTake($pdo, $resource));
        $this->assertFalse($lock->acquire(false));
        $this->assertFalse($lock->acquire(true, timeout: 0.3));
        $pdo->query("DO RELEASE_LOCK('".hash('sha256', $resource)."')");
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    public function testAMysqlStoreInACombinedStoreIsCalledOnPhpsThread(): void
    {
        $resource = uniqid(__METHOD__, true);
        $combined = new \Deadbolt\Store\CombinedStore([$this->getStore(), new \Deadbolt\Store\InMemoryStore()], new \Deadbolt\Strategy\UnanimousStrategy());
        $lock = (new LockFactory($combined))->createLock($resource);
        $this->assertTrue($lock->acquire());
        $this->assertNotNull($this->holderOf($resource));
        $lock->release();
        $this->assertNull($this->holderOf($resource));
    }

    public function testStoreFactoryTakesSymfonysAdvisoryDsn(): void
    {
        $dsn = self::$server->dsn();
        // A bare mysql: DSN is a PdoStore's (the lock_keys table), as in symfony/lock's StoreFactory.
        $this->assertInstanceOf(\Deadbolt\Store\PdoStore::class, StoreFactory::createStore($dsn));
        $store = StoreFactory::createStore('mysql+advisory:'.substr($dsn, \strlen('mysql:')));
        $this->assertInstanceOf(MysqlStore::class, $store);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $store->delete($key);
        try {
            StoreFactory::createStore('mysql+advisory://app:s3cret@db/app');
            $this->fail('a DBAL URL was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('PDO\'s MySQL DSN', $e->getMessage());
            $this->assertStringNotContainsString('s3cret', $e->getMessage());
        }
    }

    public function testADsnNeverShowsInATrace(): void
    {
        $previous = ini_set('zend.exception_ignore_args', '0');
        try {
            new MysqlStore('pgsql:host=db;password=s3cret', ['db_password' => 's3cret']);
            $this->fail('a pgsql: DSN was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertInstanceOf(\SensitiveParameterValue::class, $e->getTrace()[0]['args'][0] ?? null);
            $this->assertInstanceOf(\SensitiveParameterValue::class, $e->getTrace()[0]['args'][1] ?? null);
            // The constructor's frame and the test's: further up, PHPUnit's objects (print_r() would render them all).
            $this->assertStringNotContainsString('s3cret', print_r(\array_slice($e->getTrace(), 0, 2), true).$e);
        } finally {
            ini_set('zend.exception_ignore_args', (string) $previous);
        }
    }

    public function testBadInputIsRefusedClearlyAndWithoutSecrets(): void
    {
        $silent = self::$server->pdo();
        $silent->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_SILENT);
        $cases = [
            'a DSN of another database' => [fn () => new MysqlStore('pgsql:host=db;password=s3cret'), 'PDO\'s MySQL DSN'],
            'a DBAL URL' => [fn () => new MysqlStore('mysql://app:s3cret@db/app'), 'PDO\'s MySQL DSN'],
            'a \PDO of another database' => [fn () => new MysqlStore(new \PDO('sqlite::memory:')), 'not "sqlite"'],
            'a \PDO that does not throw' => [fn () => new MysqlStore($silent), 'PDO::ERRMODE_EXCEPTION'],
            'an unknown option' => [fn () => new MysqlStore(self::$server->dsn(), ['db_table' => 'x']), 'Unknown MysqlStore option "db_table"'],
            'a password that is not a string' => [fn () => new MysqlStore(self::$server->dsn(), ['db_password' => ['s3cret']]), '"db_password" must be a string'],
        ];
        foreach ($cases as $case => [$make, $says]) {
            try {
                $make();
                $this->fail("$case was taken");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($says, $e->getMessage(), $case);
                $this->assertStringNotContainsString('s3cret', $e->getMessage().$e->getTraceAsString(), $case);
            }
        }
        try {
            new MysqlStore(new \stdClass());
            $this->fail('a stdClass was taken');
        } catch (\TypeError $e) {
            $this->assertSame('Deadbolt\Store\MysqlStore::__construct(): Argument #1 ($connOrDsn) must be of type PDO|string, stdClass given', $e->getMessage());
        }
        try {
            $this->getStore()->inspect('r');
            $this->fail('inspect() answered');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('performance_schema.metadata_locks', $e->getMessage());
        }
    }

    public function testAServerThatIsNotThereIsAStorageFailureWithoutThePassword(): void
    {
        $server = MariaDbServer::start();
        $dsn = $server->dsn(';password=s3cret');
        $server->stop();
        $store = new MysqlStore($dsn);
        try {
            $store->save(new Key(uniqid(__METHOD__, true)));
            $this->fail('saved on no server');
        } catch (LockStorageException $e) {
            $this->assertStringStartsWith("MysqlStore(127.0.0.1:{$server->port}) cannot connect", $e->getMessage());
            $this->assertStringNotContainsString('s3cret', $e->getMessage());
        }
    }

    /**
     * The session holding symfony/lock's name for $resource (CONNECTION_ID() as a string), or null.
     */
    private function holderOf(string $resource): ?string
    {
        $holder = self::$server->pdo()->query("SELECT IS_USED_LOCK('".hash('sha256', $resource)."')")->fetchColumn();

        return null === $holder ? null : (string) $holder;
    }

    /**
     * symfony/lock's MysqlStore::save() statement on $pdo's session: 1 taken, 0 held by another session, -1 by this.
     */
    private function tryTake(\PDO $pdo, string $resource): int
    {
        $statement = $pdo->prepare('SELECT IF(IS_USED_LOCK(:name) = CONNECTION_ID(), -1, GET_LOCK(:name, 0))');
        $statement->execute(['name' => hash('sha256', $resource)]);

        return (int) $statement->fetchColumn();
    }
}
