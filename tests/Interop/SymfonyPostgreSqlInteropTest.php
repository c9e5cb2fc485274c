<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\PostgreSqlStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\PostgresServer;
use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\PostgreSqlStore as SymfonyPostgreSqlStore;

/**
 * Deadbolt's PostgreSqlStore and symfony/lock's PostgreSqlStore on one database are one lock: the advisory lock on
 * crc32(resource), exclusive or shared, each library on a session of its own. The symfony/lock under test is this
 * platform's (5.4 on Debian 12, 6.4 on Debian 13, 7.4 from sid).
 *
 * @requires extension pdo_pgsql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_pgsql')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyPostgreSqlInteropTest extends DeadboltTestCase
{
    use SymfonyAcrossProcesses;
    use SymfonyThroughTheBridge;

    private const SYMFONY_PROCESS = <<<'PHP'
        require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
        $store = new Symfony\Component\Lock\Store\PostgreSqlStore($vars['dsn']);
        $lock = (new Symfony\Component\Lock\LockFactory($store))->createLock($vars['resource'], 30.0);
        echo "ready\n";
        echo $lock->acquire((bool) $vars['blocking']) ? "holding\n" : "refused\n";
        fgets(STDIN);
        $lock->release();
        echo "released\n";
        PHP;

    private static ?PostgresServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = PostgresServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    public function testSymfonyHolderExcludesDeadboltUntilItReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfonyLock($resource);
        $deadbolt = $this->deadboltLock($resource);
        $this->assertTrue($symfony->acquire(false));

        $this->assertFalse($deadbolt->acquire(false));
        $this->assertFalse($deadbolt->acquireRead(false));
        $symfony->release();

        $this->assertTrue($deadbolt->acquire(false));
        $deadbolt->release();
    }

    public function testDeadboltHolderExcludesSymfonyUntilItReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltLock($resource);
        $symfony = $this->symfonyLock($resource);
        $this->assertTrue($deadbolt->acquire(false));

        $this->assertFalse($symfony->acquire(false));
        $deadbolt->refresh();
        $this->assertFalse($symfony->acquire(false));
        $deadbolt->release();

        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
    }

    public function testReadersOfBothLibrariesShareAndExcludeWriters(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyReader = $this->symfonyLock($resource);
        $deadboltReader = $this->deadboltLock($resource);
        $this->assertTrue($symfonyReader->acquireRead(false));
        $this->assertTrue($deadboltReader->acquireRead(false));

        $this->assertFalse($this->symfonyLock($resource)->acquire(false));
        $this->assertFalse($this->deadboltLock($resource)->acquire(false));
        $symfonyReader->release();
        $this->assertFalse($this->symfonyLock($resource)->acquire(false), 'Deadbolt still reads');
        $deadboltReader->release();
        $this->assertTrue($this->symfonyLock($resource)->acquire(false));
    }

    /** Both libraries on the application's \PDO (a session each), as each takes one: the same lock. */
    public function testBothLibrariesOnTheApplicationsPdoAreOneLock(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = (new SymfonyLockFactory(new SymfonyPostgreSqlStore(self::$server->pdo())))->createLock($resource, 30.0);
        $deadbolt = (new LockFactory(new PostgreSqlStore(self::$server->pdo())))->createLock($resource, 30.0);

        $this->assertTrue($symfony->acquire(false));
        $this->assertFalse($deadbolt->acquire(false));
        $this->assertFalse($deadbolt->acquireRead(false));
        $symfony->release();

        $this->assertTrue($deadbolt->acquireRead(false));
        $this->assertTrue($symfony->acquireRead(false), 'readers share');
        $symfony->release();
        $this->assertTrue($deadbolt->acquire(false), 'promoted once the other reader left');
        $this->assertFalse($symfony->acquire(false));
        $deadbolt->release();
        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
    }

    public function testAKilledDeadboltHoldersLockIsFreedForSymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = PhpProcess::start(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\PostgreSqlStore($vars['dsn'])))->createLock($vars['resource']);
            echo $lock->acquire() ? "holding\n" : "refused\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'dsn' => self::$server->dsn()]);
        $this->assertSame('holding', $holder->readLine());
        $symfony = $this->symfonyLock($resource);
        $this->assertFalse($symfony->acquire(false));

        posix_kill($holder->pid(), SIGKILL);
        $this->assertSame(128 + SIGKILL, $holder->waitForExit());

        // symfony/lock waits in the server's queue until the dead holder's session is gone.
        $this->assertTrue($symfony->acquire(true));
        $symfony->release();
    }

    /**
     * symfony/lock waits in the server's queue (pg_advisory_lock): its waiting session shows there.
     */
    protected function untilSymfonyWaits(PhpProcess $symfony, string $resource): void
    {
        $deadline = microtime(true) + 30.0;
        while (['ExclusiveLock:false', 'ExclusiveLock:true'] !== self::$server->advisoryLocks($resource)) {
            $this->assertLessThan($deadline, microtime(true), 'symfony/lock never queued');
            usleep(20_000);
        }
    }

    protected function spawnSymfony(string $resource, bool $blocking): PhpProcess
    {
        $process = PhpProcess::start(self::SYMFONY_PROCESS, ['resource' => $resource, 'blocking' => $blocking, 'dsn' => self::$server->dsn()]);
        $this->assertSame('ready', $process->readLine());

        return $process;
    }

    protected function bridgedDsn(): string
    {
        return 'deadbolt+pgsql+advisory:'.substr(self::$server->dsn(), \strlen('pgsql:'));
    }

    protected function symfonyLock(string $resource): SymfonyLock
    {
        return (new SymfonyLockFactory(new SymfonyPostgreSqlStore(self::$server->dsn())))->createLock($resource, 30.0);
    }

    protected function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new PostgreSqlStore(self::$server->dsn())))->createLock($resource, 30.0);
    }
}
