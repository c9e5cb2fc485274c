<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\PdoStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\PdoStore as SymfonyPdoStore;

/**
 * Deadbolt's PdoStore and symfony/lock's PdoStore on one lock table are one lock: the same row (sha256 of the
 * resource, the holder's token, an expiry by the database's clock), taken where free or expired, extended and removed
 * only by its holder. Each subclass: one database. The symfony/lock under test is this platform's (5.4 on Debian 12,
 * 6.4 on Debian 13, 7.4 from sid).
 *
 * @requires extension pdo
 */
abstract class SymfonyPdoInteropTestCase extends DeadboltTestCase
{
    use SymfonyAcrossProcesses;
    use SymfonyThroughTheBridge;

    private const SYMFONY_PROCESS = <<<'PHP'
        require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
        $store = new Symfony\Component\Lock\Store\PdoStore($vars['dsn']);
        $lock = (new Symfony\Component\Lock\LockFactory($store))->createLock($vars['resource'], 30.0);
        echo "ready\n";
        // symfony/lock's PdoStore cannot block: its Lock polls.
        echo $lock->acquire((bool) $vars['blocking']) ? "holding\n" : "refused\n";
        fgets(STDIN);
        $lock->release();
        echo "released\n";
        PHP;

    abstract protected static function dsn(): string;

    public function testSymfonyHolderExcludesDeadboltUntilItReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfonyLock($resource);
        $deadbolt = $this->deadboltLock($resource);
        $this->assertTrue($symfony->acquire(false));

        $this->assertFalse($deadbolt->acquire(false));
        $this->assertFalse($deadbolt->acquireRead(false), 'read locks are exclusive here');
        $symfony->refresh();
        $this->assertFalse($deadbolt->acquire(false), 'symfony/lock extended its own row');
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
        $this->assertFalse($symfony->acquire(false), 'Deadbolt extended its own row');
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
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\PdoStore($vars['dsn'])))->createLock($vars['resource'], 1.0);
            echo $lock->acquire() ? "holding\n" : "refused\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'dsn' => static::dsn()]);
        $this->assertSame('holding', $holder->readLine());
        $symfony = $this->symfonyLock($resource);
        $this->assertFalse($symfony->acquire(false));

        posix_kill($holder->pid(), SIGKILL);
        $this->assertSame(128 + SIGKILL, $holder->waitForExit());

        // symfony/lock polls until the dead holder's row has expired.
        $this->assertTrue($symfony->acquire(true));
        $symfony->release();
    }

    protected function spawnSymfony(string $resource, bool $blocking): PhpProcess
    {
        $process = PhpProcess::start(self::SYMFONY_PROCESS, ['resource' => $resource, 'blocking' => $blocking, 'dsn' => static::dsn()]);
        $this->assertSame('ready', $process->readLine());

        return $process;
    }

    protected function bridgedDsn(): string
    {
        return 'deadbolt+'.static::dsn();
    }

    protected function symfonyLock(string $resource): SymfonyLock
    {
        return (new SymfonyLockFactory(new SymfonyPdoStore(static::dsn())))->createLock($resource, 30.0);
    }

    protected function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new PdoStore(static::dsn())))->createLock($resource, 30.0);
    }
}
