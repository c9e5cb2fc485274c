<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\MemcachedStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\MemcachedServer;
use Deadbolt\Tests\Support\PhpProcess;
use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\MemcachedStore as SymfonyMemcachedStore;

/**
 * Deadbolt's MemcachedStore and symfony/lock's MemcachedStore on one memcached server are one lock: the same item (the
 * resource under the client's key prefix, holding the holder's token), taken with add, extended and released only by
 * its holder. The symfony/lock under test is this platform's (5.4 on Debian 12, 6.4 on Debian 13, 7.4 from sid).
 *
 * @requires extension memcached
 *
 * @group no-redis
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('memcached')]
#[\PHPUnit\Framework\Attributes\Group('no-redis')]
final class SymfonyMemcachedInteropTest extends DeadboltTestCase
{
    use SymfonyAcrossProcesses;
    use SymfonyThroughTheBridge;

    private const SYMFONY_PROCESS = <<<'PHP'
        require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
        $memcached = new Memcached();
        $memcached->addServer('127.0.0.1', (int) $vars['port']);
        $store = new Symfony\Component\Lock\Store\MemcachedStore($memcached);
        $lock = (new Symfony\Component\Lock\LockFactory($store))->createLock($vars['resource'], 30.0);
        echo "ready\n";
        echo $lock->acquire((bool) $vars['blocking']) ? "holding\n" : "refused\n";
        fgets(STDIN);
        $lock->release();
        echo "released\n";
        PHP;

    private static ?MemcachedServer $server = null;

    public static function setUpBeforeClass(): void
    {
        self::$server = MemcachedServer::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$server = null;
    }

    public function testDeadboltsLockIsSymfonysItemUnderTheApplicationsPrefix(): void
    {
        $memcached = self::$server->client();
        $memcached->setOption(\Memcached::OPT_PREFIX_KEY, 'app:');
        $resource = uniqid('myapp:prod:daily-report:', true);
        $deadbolt = (new LockFactory(new MemcachedStore($memcached)))->createLock($resource);
        $symfony = (new SymfonyLockFactory(new SymfonyMemcachedStore($memcached)))->createLock($resource);
        $this->assertTrue($deadbolt->acquire());

        $this->assertIsString($memcached->get($resource));
        $this->assertFalse($symfony->acquire(false));
        $deadbolt->release();
        $this->assertTrue($symfony->acquire(false));
        $this->assertFalse($deadbolt->acquire(false));
        $symfony->release();
    }

    public function testSymfonyHolderExcludesDeadboltUntilItReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfonyLock($resource);
        $deadbolt = $this->deadboltLock($resource);
        $this->assertTrue($symfony->acquire(false));

        $this->assertFalse($deadbolt->acquire(false));
        $this->assertFalse($deadbolt->acquireRead(false), 'read locks are exclusive here');
        $symfony->refresh();
        $this->assertFalse($deadbolt->acquire(false), 'symfony/lock extended its own item');
        $symfony->release();

        $this->assertTrue($deadbolt->acquire(false));
    }

    public function testDeadboltHolderExcludesSymfonyUntilItReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltLock($resource);
        $symfony = $this->symfonyLock($resource);
        $this->assertTrue($deadbolt->acquire(false));

        $this->assertFalse($symfony->acquire(false));
        $deadbolt->refresh();
        $this->assertFalse($symfony->acquire(false), 'Deadbolt extended its own item');
        $symfony->release();
        $this->assertTrue($deadbolt->isAcquired(), 'a release by symfony/lock, which does not hold it, removed nothing');
        $deadbolt->release();

        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
    }

    public function testAKilledDeadboltHoldersLockExpiresForSymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = PhpProcess::start(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\MemcachedStore($vars['dsn'])))->createLock($vars['resource'], 1.0);
            echo $lock->acquire() ? "holding\n" : "refused\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'dsn' => self::$server->dsn()]);
        $this->assertSame('holding', $holder->readLine());
        $symfony = $this->symfonyLock($resource);
        $this->assertFalse($symfony->acquire(false));

        posix_kill($holder->pid(), SIGKILL);
        $this->assertSame(128 + SIGKILL, $holder->waitForExit());

        // symfony/lock polls until the dead holder's item is gone.
        $this->assertTrue($symfony->acquire(true));
        $symfony->release();
    }

    protected function spawnSymfony(string $resource, bool $blocking): PhpProcess
    {
        $process = PhpProcess::start(self::SYMFONY_PROCESS, ['resource' => $resource, 'blocking' => $blocking, 'port' => self::$server->port]);
        $this->assertSame('ready', $process->readLine());

        return $process;
    }

    protected function bridgedDsn(): string
    {
        return 'deadbolt+'.self::$server->dsn();
    }

    protected function symfonyLock(string $resource): SymfonyLock
    {
        return (new SymfonyLockFactory(new SymfonyMemcachedStore(self::$server->client())))->createLock($resource, 30.0);
    }

    protected function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new MemcachedStore(self::$server->client())))->createLock($resource, 30.0);
    }
}
