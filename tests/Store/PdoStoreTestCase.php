<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\InvalidTtlException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Store\StoreFactory;

/**
 * PdoStore on one database (each subclass: SQLite, PostgreSQL, MariaDB): the store contract for exclusive locks,
 * symfony/lock's rows, expiry (a killed holder's lock ends with its TTL, an expired lock is never revived), fork(), the
 * application's \PDO and its transactions, createTable(), options and bad input. Interop with symfony/lock's PdoStore
 * is in tests/Interop/SymfonyPdoInteropTest.php.
 *
 * @requires extension pdo
 * @requires extension pcntl
 */
abstract class PdoStoreTestCase extends StoreContractTestCase
{
    use ExpiringExclusiveStoreTestTrait;

    /**
     * The DSN of the database under test.
     */
    abstract protected static function dsn(): string;

    /**
     * A \PDO of the test's own on that database.
     */
    protected static function pdo(): \PDO
    {
        return new \PDO(static::dsn(), null, null, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    protected function getStore(): object
    {
        return new PdoStore(static::dsn());
    }

    public function testALockIsSymfonysRowInTheLockTable(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory($this->getStore()))->createLock($resource, 60.0);
        $this->assertTrue($lock->acquire());

        $row = $this->row($resource);
        $this->assertNotNull($row, 'a row under sha256(resource)');
        $this->assertSame(44, \strlen($row['key_token']), 'the token, as symfony/lock\'s');
        $now = (int) self::pdo()->query('SELECT '.$this->now())->fetchColumn();
        // 60 s, whole seconds plus one for the database's clock.
        // (a second may tick between the two reads)
        $this->assertEqualsWithDelta(61, (int) $row['key_expiration'] - $now, 1.0);
        $lock->release();
        $this->assertNull($this->row($resource));
    }

    public function testSaveGivesTheKeyTheInitialTtl(): void
    {
        $store = new PdoStore(static::dsn(), [], 0.0, 60);
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $this->assertGreaterThan(50.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(60.0, $key->getRemainingLifetime());
    }

    public function testTheRefresherCannotReachTheApplicationsPdoAndSaysSo(): void
    {
        try {
            (new LockFactory(new PdoStore(self::pdo())))->createLock(uniqid(__METHOD__, true), 30.0, autoRefresh: true);
            $this->fail('autoRefresh was taken on a store only PHP can call');
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString('autoRefresh needs a store the refresher can reach without PHP', $e->getMessage());
        }
    }

    public function testTheApplicationsPdoKeepsTheLocksInItsDatabase(): void
    {
        $pdo = self::pdo();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new PdoStore($pdo)))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $this->assertNotNull($this->row($resource));
        $this->assertFalse((new LockFactory($this->getStore()))->createLock($resource)->acquire(), 'one table for both');
        $lock->release();
    }

    public function testAPdoThatDoesNotThrowIsRefusedSayingWhatToSet(): void
    {
        $pdo = self::pdo();
        $pdo->setAttribute(\PDO::ATTR_ERRMODE, \PDO::ERRMODE_SILENT);

        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('PDO::ERRMODE_EXCEPTION');
        new PdoStore($pdo);
    }

    public function testTheTableIsCreatedOnFirstUseButNotInsideATransaction(): void
    {
        $table = 'locks_'.bin2hex(random_bytes(4));
        $pdo = self::pdo();
        $store = new PdoStore($pdo, ['db_table' => $table]);
        $pdo->beginTransaction();
        try {
            $store->save(new Key(uniqid(__METHOD__, true)));
            $this->fail('a table was created inside the application\'s transaction');
        } catch (LockStorageException $e) {
            $this->assertStringContainsString("its table \"$table\" does not exist", $e->getMessage());
            $this->assertStringContainsString('createTable()', $e->getMessage());
        } finally {
            $pdo->rollBack();
        }

        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->assertSame(1, (int) $pdo->query("SELECT COUNT(*) FROM $table")->fetchColumn());
        $pdo->exec("DROP TABLE $table");
    }

    public function testCreateTableMakesSymfonysTableUnderTheNamesGiven(): void
    {
        $table = 'locks_'.bin2hex(random_bytes(4));
        $options = ['db_table' => $table, 'db_id_col' => 'id', 'db_token_col' => 'token', 'db_expiration_col' => 'ends'];
        $store = new PdoStore(static::dsn(), $options);
        $store->createTable();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $row = self::pdo()->query("SELECT id, token, ends FROM $table")->fetch(\PDO::FETCH_ASSOC);
        $this->assertSame(hash('sha256', (string) $key), $row['id']);
        try {
            $store->createTable();
            $this->fail('a second createTable() passed');
        } catch (\PDOException $e) {
            $this->assertStringStartsWith("PdoStore(", $e->getMessage());
        }
        self::pdo()->exec("DROP TABLE $table");
    }

    /**
     * symfony/lock's PdoStore lets PDO's exception through: a statement the database refuses is a \PDOException here too,
     * on the application's \PDO and on the store's own connection (PDO, or Deadbolt's PostgreSQL client), with the
     * SQLSTATE as its code and in errorInfo. It is made at the store call: no frame of its trace is PDO's, whose
     * arguments (the statement's parameters, the token among them) a trace would show with exception_ignore_args off.
     */
    public function testAStatementTheDatabaseRefusesIsAPdoExceptionThatShowsNoParameters(): void
    {
        $ignoreArgs = ini_set('zend.exception_ignore_args', '0');
        foreach (['the application\'s \PDO' => self::pdo(), 'a DSN' => static::dsn()] as $on => $connection) {
            $table = 'locks_'.bin2hex(random_bytes(4));
            $store = new PdoStore($connection, ['db_table' => $table]);
            $store->createTable();
            self::pdo()->exec("ALTER TABLE $table RENAME COLUMN key_token TO renamed");
            try {
                $store->save(new Key(uniqid(__METHOD__, true)));
                $this->fail("saved without a token column, on $on");
            } catch (\PDOException $e) {
                $this->assertStringStartsWith('PdoStore(', $e->getMessage(), $on);
                $this->assertMatchesRegularExpression('/^[0-9A-Z]{5}$/', $e->getCode(), "the SQLSTATE, on $on");
                $this->assertSame($e->getCode(), $e->errorInfo[0], $on);
                $this->assertSame(PdoStore::class.'->save', $e->getTrace()[0]['class'].'->'.$e->getTrace()[0]['function'], $on);
                foreach ($e->getTrace() as $frame) {
                    $this->assertStringStartsNotWith('PDO', $frame['class'] ?? '', "a frame of PDO's, on $on");
                }
            }
            $lock = (new LockFactory($store))->createLock(uniqid(__METHOD__, true));
            try {
                $lock->acquire();
                $this->fail("acquired without a token column, on $on");
            } catch (\Deadbolt\Exception\LockAcquiringException $e) {
                $this->assertInstanceOf(\PDOException::class, $e->getPrevious(), "the cause, as symfony/lock's Lock keeps it, on $on");
            }
            self::pdo()->exec("DROP TABLE $table");
        }
        ini_set('zend.exception_ignore_args', (string) $ignoreArgs);
    }

    public function testBadArgumentsAreRefusedClearlyAndWithoutSecrets(): void
    {
        $cases = [
            'an unknown option' => [fn () => new PdoStore(static::dsn(), ['db_tabel' => 'x']), InvalidArgumentException::class, 'Unknown PdoStore option "db_tabel"'],
            'a name that is no identifier' => [fn () => new PdoStore(static::dsn(), ['db_table' => 'locks; DROP TABLE users']), InvalidArgumentException::class, '"db_table" must be a plain SQL identifier'],
            'a DBAL URL' => [fn () => new PdoStore('pgsql://app:s3cr3t@db/app'), InvalidArgumentException::class, 'Doctrine DBAL\'s form'],
            'an unknown driver' => [fn () => new PdoStore('odbc:s3cr3t'), InvalidArgumentException::class, 'the driver "odbc" is none of them'],
            'a probability' => [fn () => new PdoStore(static::dsn(), [], 2.0), InvalidArgumentException::class, 'gcProbability between 0 and 1'],
            'an initial TTL under a second' => [fn () => new PdoStore(static::dsn(), [], 0.01, 0), InvalidTtlException::class, 'at least 1 second'],
            'a TTL under a second' => [fn () => $this->getStore()->putOffExpiration(new Key('k'), 0.1), InvalidTtlException::class, 'at least 1 second'],
            'a password that is not a string' => [fn () => new PdoStore(static::dsn(), ['db_password' => ['s3cr3t']]), InvalidArgumentException::class, '"db_password" must be a string'],
        ];
        foreach ($cases as $case => [$make, $class, $says]) {
            try {
                $make();
                $this->fail("$case was taken");
            } catch (\Throwable $e) {
                $this->assertInstanceOf($class, $e, $case);
                $this->assertStringContainsString($says, $e->getMessage(), $case);
                $this->assertStringNotContainsString('s3cr3t', $e->getMessage(), $case);
            }
        }
        try {
            new PdoStore(new \stdClass());
            $this->fail('a stdClass was taken');
        } catch (\TypeError $e) {
            $this->assertSame('Deadbolt\Store\PdoStore::__construct(): Argument #1 ($connOrDsn) must be of type PDO|string, stdClass given', $e->getMessage());
        }
    }

    public function testStoreFactoryGivesPdoDsnsAndPdosToPdoStoreAndRefusesDbalUrls(): void
    {
        $this->assertInstanceOf(PdoStore::class, StoreFactory::createStore(static::dsn()));
        $this->assertInstanceOf(PdoStore::class, StoreFactory::createStore(self::pdo()));
        foreach (['postgresql://app:s3cr3t@db/app', 'mysql://app:s3cr3t@db/app', 'sqlite:///var/lib/app.db'] as $url) {
            try {
                StoreFactory::createStore($url);
                $this->fail("$url was taken");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString('DoctrineDbalStore', $e->getMessage());
                $this->assertStringNotContainsString('s3cr3t', $e->getMessage());
            }
        }
    }

    public function testAPdoStoreInACombinedStoreIsCalledOnPhpsThread(): void
    {
        $resource = uniqid(__METHOD__, true);
        $combined = new \Deadbolt\Store\CombinedStore([$this->getStore(), new \Deadbolt\Store\InMemoryStore()], new \Deadbolt\Strategy\UnanimousStrategy());
        $lock = (new LockFactory($combined))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $this->assertNotNull($this->row($resource));
        $this->assertFalse((new LockFactory($this->getStore()))->createLock($resource)->acquire());
        $lock->release();
        $this->assertNull($this->row($resource));
    }

    /**
     * The lock table's row of $resource (symfony/lock's key_id: its SHA-256), or null.
     *
     * @return array{key_token: string, key_expiration: int|string}|null
     */
    private function row(string $resource): ?array
    {
        $statement = self::pdo()->prepare('SELECT key_token, key_expiration FROM lock_keys WHERE key_id = ?');
        $statement->execute([hash('sha256', $resource)]);

        return $statement->fetch(\PDO::FETCH_ASSOC) ?: null;
    }

    /**
     * The database's clock in Unix seconds, as symfony/lock reads it.
     */
    abstract protected function now(): string;
}
