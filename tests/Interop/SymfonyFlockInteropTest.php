<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Symfony\Component\Lock\Lock as SymfonyLock;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\FlockStore as SymfonyFlockStore;

/**
 * Deadbolt's FlockStore and symfony/lock 5.4's FlockStore in one directory are one lock: same file, same flock modes.
 *
 * flock(2) locks belong to open file descriptions, so two libraries in one process exclude each other as two
 * processes would; one cross-process case in each direction confirms it.
 */
final class SymfonyFlockInteropTest extends DeadboltTestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = $this->tempDir();
    }

    /**
     * @return iterable<string, array{string, string, bool}>
     */
    public static function modePairs(): iterable
    {
        yield 'exclusive vs exclusive' => ['acquire', 'acquire', false];
        yield 'shared vs exclusive' => ['acquireRead', 'acquire', false];
        yield 'exclusive vs shared' => ['acquire', 'acquireRead', false];
        yield 'shared + shared' => ['acquireRead', 'acquireRead', true];
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testSymfonyHolderVersusDeadbolt(string $symfonyMode, string $deadboltMode, bool $coexist): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfonyLock($resource);
        $deadbolt = $this->deadboltLock($resource);

        $this->assertTrue($symfony->$symfonyMode(false));

        $this->assertSame($coexist, $deadbolt->$deadboltMode(false));
        $symfony->release();
        $this->assertTrue($coexist || $deadbolt->$deadboltMode(false), 'Deadbolt gets it once Symfony released');
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testDeadboltHolderVersusSymfony(string $symfonyMode, string $deadboltMode, bool $coexist): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltLock($resource);
        $symfony = $this->symfonyLock($resource);

        $this->assertTrue($deadbolt->$deadboltMode(false));

        $this->assertSame($coexist, $symfony->$symfonyMode(false));
        $deadbolt->release();
        $this->assertTrue($coexist || $symfony->$symfonyMode(false), 'Symfony gets it once Deadbolt released');
    }

    public function testBothLibrariesUseTheSameFile(): void
    {
        $resource = 'invoice:42/'.uniqid(__METHOD__, true);
        $symfony = $this->symfonyLock($resource);
        $symfony->acquire();
        $symfony->release();
        $symfonyFiles = scandir($this->dir);

        $deadbolt = $this->deadboltLock($resource);
        $deadbolt->acquire();

        $this->assertSame($symfonyFiles, scandir($this->dir), 'Deadbolt created no file of its own');
        $this->assertCount(3, $symfonyFiles);
    }

    public function testDeadboltBlocksUntilSymfonyReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyProcess = $this->spawn(<<<'PHP'
            require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
            $factory = new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\FlockStore($vars['dir']));
            $lock = $factory->createLock($vars['resource']);
            echo $lock->acquire(false) ? "holding\n" : "refused\n";
            fgets(STDIN);
            $lock->release();
            echo "released\n";
            PHP, ['dir' => $this->dir, 'resource' => $resource]);
        $this->assertSame('holding', $symfonyProcess->readLine());
        $deadbolt = $this->deadboltLock($resource);

        $this->assertFalse($deadbolt->acquire(false), 'Deadbolt here, symfony/lock in another process');
        $this->assertFalse($deadbolt->acquireRead(false));
        $symfonyProcess->writeLine('release');
        $this->assertSame('released', $symfonyProcess->readLine());

        $this->assertTrue($deadbolt->acquire(true));
        $symfonyProcess->closeStdin();
        $this->assertSame(0, $symfonyProcess->waitForExit(), $symfonyProcess->stderr());
    }

    public function testSymfonyInAnotherProcessIsRefusedWhileDeadboltHolds(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltLock($resource);
        $deadbolt->acquire();
        $probe = <<<'PHP'
            require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
            $factory = new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\FlockStore($vars['dir']));
            $lock = $factory->createLock($vars['resource']);
            echo $lock->acquire(false) ? 'acquired' : 'refused';
            PHP;

        $held = \Deadbolt\Tests\Support\PhpProcess::run($probe, ['dir' => $this->dir, 'resource' => $resource], false);
        $deadbolt->release();
        $free = \Deadbolt\Tests\Support\PhpProcess::run($probe, ['dir' => $this->dir, 'resource' => $resource], false);

        $this->assertSame(['exit' => 0, 'stdout' => 'refused', 'stderr' => ''], $held);
        $this->assertSame(['exit' => 0, 'stdout' => 'acquired', 'stderr' => ''], $free);
    }

    private function symfonyLock(string $resource): SymfonyLock
    {
        return (new SymfonyLockFactory(new SymfonyFlockStore($this->dir)))->createLock($resource);
    }

    private function deadboltLock(string $resource): \Deadbolt\Lock
    {
        return (new LockFactory(new FlockStore($this->dir)))->createLock($resource);
    }
}
