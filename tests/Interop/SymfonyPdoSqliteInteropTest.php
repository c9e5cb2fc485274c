<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Store\PdoStore;

/**
 * Deadbolt's and symfony/lock's PdoStore on one SQLite file.
 *
 * @requires extension pdo_sqlite
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_sqlite')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyPdoSqliteInteropTest extends SymfonyPdoInteropTestCase
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
}
