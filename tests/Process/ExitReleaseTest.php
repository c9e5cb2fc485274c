<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * A Lock still held when its process ends (exit(), fatal error, uncaught exception) is released by its destructor.
 *
 * The kernel would drop a flock lock at exit anyway, which would hide a missing release. So the child first forks
 * a witness that keeps a copy of the lock file's descriptor open past the child's end: the lock can then only be
 * free if the child's destructor unlocked it.
 */
final class ExitReleaseTest extends DeadboltTestCase
{
    private const CHILD = <<<'PHP'
        $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir'])))->createLock($vars['resource']);
        if (!$lock->acquire(false)) {
            echo "refused\n";
            exit(1);
        }
        $witness = pcntl_fork();
        if (0 === $witness) {
            // Holds the inherited descriptor until the test closes stdin; leaves without any PHP shutdown.
            fclose(STDOUT);
            fclose(STDERR);
            stream_get_contents(STDIN);
            posix_kill(posix_getpid(), SIGKILL);
        }
        echo "holding $witness\n";
        PHP;

    /**
     * @return iterable<string, array{string, int}>
     */
    public static function endings(): iterable
    {
        yield 'exit(3)' => ['exit(3);', 3];
        yield 'end of script' => ['', 0];
        yield 'fatal error (memory exhausted)' => ["ini_set('memory_limit', '16M'); \$waste = str_repeat('x', 64 << 20);", 255];
        yield 'uncaught exception' => ["throw new RuntimeException('boom');", 255];
        yield 'exit from a function' => ['(function () { exit(4); })();', 4];
    }

    /**
     * Not under valgrind: with USE_ZEND_ALLOC=0 memory_limit is not enforced, so no memory-exhaustion fatal.
     *
     * @dataProvider endings
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('endings')]
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testTheLockIsFreeAfterTheProcessEnds(string $ending, int $exitCode): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $child = $this->spawn(self::CHILD."\n".$ending, ['dir' => $dir, 'resource' => $resource]);
        $line = $child->readLine();
        $this->assertMatchesRegularExpression('/^holding \d+$/', $line);
        $witness = (int) substr($line, 8);

        $this->assertSame($exitCode, $child->waitForExit(), 'exit code; stderr: '.$child->stderr());

        $this->assertTrue(posix_kill($witness, 0), 'the witness still holds a copy of the descriptor');
        $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource);
        $this->assertTrue($lock->acquire(false), 'the lock was released when its process ended');
        $child->closeStdin();
    }

    public function testALockWithoutAutoReleaseIsStillDroppedWithItsProcess(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);

        $result = \Deadbolt\Tests\Support\PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir'])))->createLock($vars['resource'], 300.0, false);
            echo $lock->acquire(false) ? 'acquired' : 'refused';
            exit(3);
            PHP, ['dir' => $dir, 'resource' => $resource]);

        $this->assertSame(['exit' => 3, 'stdout' => 'acquired', 'stderr' => ''], $result);
        $this->assertTrue((new LockFactory(new FlockStore($dir)))->createLock($resource)->acquire(false));
    }
}
