<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Tests\Support\MariaDbServer;

/**
 * Deadbolt's and symfony/lock's PdoStore on one lock table of a private MariaDB server.
 *
 * @requires extension pdo_mysql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_mysql')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyPdoMySqlInteropTest extends SymfonyPdoInteropTestCase
{
    private static ?MariaDbServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MariaDbServer::start();
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
