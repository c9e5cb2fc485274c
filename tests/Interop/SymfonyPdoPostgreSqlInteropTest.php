<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Tests\Support\PostgresServer;

/**
 * Deadbolt's and symfony/lock's PdoStore on one lock table of a private PostgreSQL server.
 *
 * @requires extension pdo_pgsql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_pgsql')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyPdoPostgreSqlInteropTest extends SymfonyPdoInteropTestCase
{
    private static ?PostgresServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = PostgresServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    protected static function dsn(): string
    {
        return self::$server->dsn();
    }
}
