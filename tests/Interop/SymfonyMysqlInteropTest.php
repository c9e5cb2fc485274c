<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\MysqlStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\MariaDbServer;
use Deadbolt\Tests\Support\PhpProcess;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;

/**
 * Deadbolt's MysqlStore and symfony/lock's MysqlStore (8.2) on one server are one lock: the user-level lock named by
 * the resource's SHA-256 in hex. symfony/lock 8.2 is not packaged by Debian (experimental has 8.1), so the peer process
 * runs, without Deadbolt, the statements symfony/lock 8.2's MysqlStore runs (as its pull request #64757 states them):
 * `SELECT IF(IS_USED_LOCK(:name) = CONNECTION_ID(), -1, GET_LOCK(:name, 0))` to take, `GET_LOCK(:name, -1)` to wait
 * (here 60 s: MariaDB answers -1 with NULL at once, where MySQL waits forever), `DO RELEASE_LOCK(:name)` to release. And symfony/lock's own Lock (this platform's) on Deadbolt's store through the
 * bridge excludes such a session.
 *
 * @requires extension pdo_mysql
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_mysql')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyMysqlInteropTest extends DeadboltTestCase
{
    use SymfonyAcrossProcesses;

    private const SYMFONY_PROCESS = <<<'PHP'
        $pdo = new PDO($vars['dsn'], null, null, [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
        $name = hash('sha256', $vars['resource']);
        echo "ready\n";
        if ($vars['blocking']) {
            // symfony/lock 8.2 passes -1 (MySQL's "forever"), which MariaDB answers with NULL at once.
            $take = $pdo->prepare('SELECT GET_LOCK(:name, 60)');
        } else {
            $take = $pdo->prepare('SELECT IF(IS_USED_LOCK(:name1) = CONNECTION_ID(), -1, GET_LOCK(:name2, 0))');
        }
        $take->execute($vars['blocking'] ? ['name' => $name] : ['name1' => $name, 'name2' => $name]);
        echo 1 === (int) $take->fetchColumn() ? "holding\n" : "refused\n";
        fgets(STDIN);
        $pdo->prepare('DO RELEASE_LOCK(:name)')->execute(['name' => $name]);
        echo "released\n";
        PHP;

    private static ?MariaDbServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MariaDbServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    public function testSymfonysLockOnDeadboltsStoreThroughTheBridgeExcludesAnotherSession(): void
    {
        $resource = uniqid(__METHOD__, true);
        $bridged = \Deadbolt\Bridge\Symfony\StoreFactory::createStore('deadbolt+mysql+advisory:'.substr(self::$server->dsn(), \strlen('mysql:')));
        $this->assertInstanceOf(\Deadbolt\Bridge\Symfony\DeadboltStore::class, $bridged);
        $onDeadbolt = (new SymfonyLockFactory($bridged))->createLock($resource, 30.0);
        $this->assertTrue($onDeadbolt->acquire());

        $symfony = $this->spawnSymfony($resource, false);
        $this->assertSame('refused', $symfony->readLine());
        $symfony->writeLine('end');
        $this->assertSame('released', $symfony->readLine());
        $this->assertSame(0, $symfony->waitForExit(), $symfony->stderr());
        $this->assertTrue($onDeadbolt->isAcquired(), "the other session's release freed nothing of Deadbolt's");
        $onDeadbolt->release();
    }

    protected function untilSymfonyWaits(PhpProcess $symfony, string $resource): void
    {
        // The server shows the peer's wait in GET_LOCK; polled, as a process's state is observed.
        for ($tries = 0; 0 === self::$server->waitersFor(hash('sha256', $resource)); ++$tries) {
            $this->assertLessThan(6000, $tries, 'the symfony/lock process never waited in GET_LOCK: '.$symfony->stderr());
            usleep(10000);
        }
    }

    protected function spawnSymfony(string $resource, bool $blocking): PhpProcess
    {
        $process = PhpProcess::start(self::SYMFONY_PROCESS, ['resource' => $resource, 'blocking' => $blocking, 'dsn' => self::$server->dsn()], withExtension: false);
        $this->assertSame('ready', $process->readLine());

        return $process;
    }

    protected function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new MysqlStore(self::$server->dsn())))->createLock($resource, 30.0);
    }
}
