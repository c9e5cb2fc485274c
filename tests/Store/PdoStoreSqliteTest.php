<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\Store\PdoStore;

/**
 * PdoStore on an SQLite file (what symfony/lock's own PdoStoreTest uses), and SQLite's own cases: an in-memory
 * database, a file that cannot be opened.
 *
 * @requires extension pdo_sqlite
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_sqlite')]
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pcntl')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class PdoStoreSqliteTest extends PdoStoreTestCase
{
    private static string $file = '';

    public static function setUpBeforeClass(): void
    {
        self::$file = tempnam(sys_get_temp_dir(), 'deadbolt-sqlite-');
        (new PdoStore(self::dsn()))->createTable();
    }

    public static function tearDownAfterClass(): void
    {
        @unlink(self::$file);
    }

    protected static function dsn(): string
    {
        return 'sqlite:'.self::$file;
    }

    protected function now(): string
    {
        return "strftime('%s','now')";
    }

    public function testAnInMemoryDatabaseWorksAndIsTheProcesssOwn(): void
    {
        $store = new PdoStore('sqlite::memory:');
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->assertFalse((new PdoStore('sqlite::memory:'))->exists($key), 'another store, another database');
    }

    public function testAFileThatCannotBeOpenedIsAStorageFailureNamingTheStore(): void
    {
        $store = new PdoStore('sqlite:/nonexistent-dir/locks.db');

        $this->expectException(\Deadbolt\Exception\LockStorageException::class);
        $this->expectExceptionMessage('PdoStore(sqlite: lock_keys) cannot connect:');
        $store->save(new Key(uniqid(__METHOD__, true)));
    }
}
