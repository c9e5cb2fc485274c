<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\SemaphoreStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\SemaphoreStore as SymfonySemaphoreStore;

/**
 * Deadbolt's SemaphoreStore and symfony/lock's SemaphoreStore on one host are one lock: the same System V semaphore set
 * (symfony/lock's IPC key, PHP sysvsem's three-semaphore layout), each library's release (removing the set) waking the
 * other's waiter. The symfony/lock under test is this platform's (5.4 on Debian 12: md5 keys; 6.4 on Debian 13 and
 * 7.4 from sid: xxh128 keys); Deadbolt's store is given the matching key hash.
 *
 * A semaphore is no one's in particular, so one process's two libraries exclude each other as two processes would;
 * the waits and the process deaths cross processes.
 *
 * @requires extension sysvsem
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('sysvsem')]
final class SymfonySemaphoreStoreInteropTest extends DeadboltTestCase
{
    use SymfonyAcrossProcesses;

    private const SYMFONY_PROCESS = <<<'PHP'
        require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
        $lock = (new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\SemaphoreStore()))->createLock($vars['resource']);
        echo "ready\n";
        echo $lock->acquire((bool) $vars['blocking']) ? "holding\n" : "refused\n";
        fgets(STDIN);
        $lock->release();
        echo "released\n";
        PHP;

    /** The key hash of the symfony/lock under test: md5 before 6.0, xxh128 since. */
    private static function keyHash(): string
    {
        $source = (string) file_get_contents((string) (new \ReflectionClass(SymfonySemaphoreStore::class))->getFileName());

        return str_contains($source, "'xxh128'") ? 'xxh128' : 'md5';
    }

    public function testTheIpcKeysAreSymfonys(): void
    {
        // Unique: System V keys are the whole host's, and other suites may run at once (CI's lanes share a kernel).
        $resource = uniqid('myapp:prod:daily-report:', true);
        $expected = unpack('i', 'md5' === self::keyHash() ? md5($resource, true) : hash('xxh128', $resource, true))[1];
        $symfony = $this->symfonyLock($resource);
        $this->assertTrue($symfony->acquire());

        $this->assertSame(1, \count(array_filter(
            explode("\n", (string) shell_exec('LC_ALL=C ipcs -s')),
            static fn (string $line): bool => str_starts_with($line, sprintf('0x%08x ', $expected & 0xFFFFFFFF)),
        )), 'symfony/lock made the set of the key Deadbolt computes');
        $this->assertFalse($this->deadboltLock($resource)->acquire(false));
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
        $deadbolt->release();

        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
    }

    public function testAKilledDeadboltHolderFreesTheLockForSymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $holder = $this->spawn(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\SemaphoreStore($vars['hash'])))->createLock($vars['resource']);
            echo $lock->acquire() ? "holding\n" : "refused\n";
            fgets(STDIN);
            PHP, ['resource' => $resource, 'hash' => self::keyHash()]);
        $this->assertSame('holding', $holder->readLine());
        $symfony = $this->symfonyLock($resource);
        $this->assertFalse($symfony->acquire(false));

        posix_kill($holder->pid(), SIGKILL);
        $this->assertSame(128 + SIGKILL, $holder->waitForExit(), 'killed, and reaped: the kernel undid its hold');

        $this->assertTrue($symfony->acquire(false));
        $symfony->release();
    }

    protected function spawnSymfony(string $resource, bool $blocking): PhpProcess
    {
        $symfony = $this->spawn(self::SYMFONY_PROCESS, ['resource' => $resource, 'blocking' => $blocking]);
        $this->assertSame('ready', $symfony->readLine());

        return $symfony;
    }

    /**
     * Best effort: once it sleeps in sem_acquire(); it must get the lock either way.
     */
    protected function untilSymfonyWaits(PhpProcess $symfony, string $resource): void
    {
        self::waitUntilSleeping($symfony->pid());
    }

    private function symfonyLock(string $resource): SymfonyLock
    {
        return (new SymfonyLockFactory(new SymfonySemaphoreStore()))->createLock($resource);
    }

    protected function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new SemaphoreStore(self::keyHash())))->createLock($resource);
    }
}
