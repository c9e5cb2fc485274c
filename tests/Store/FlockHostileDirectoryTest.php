<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * The flock store in a directory others can write (mode 0666 lock files in a shared directory are the norm), and in
 * a process short of descriptors. Issue 25, items 3, 4 and 8.
 */
final class FlockHostileDirectoryTest extends DeadboltTestCase
{
    /** The one lock file in $dir. */
    private static function lockFile(string $dir): string
    {
        $files = glob($dir.'/*.lock') ?: [];
        self::assertCount(1, $files);

        return $files[0];
    }

    /**
     * Item 3: A held and drew token 1; the file was removed (a tmp cleaner); B took the resource on the new file and
     * drew 1 again, while A's isAcquired() stayed true.
     */
    public function testARemovedLockFileNeitherRepeatsATokenNorLeavesItsHolderHolding(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $a = $factory->createLock('fence-removed');
        $this->assertTrue($a->acquire());
        $first = $a->getFencingToken();
        unlink(self::lockFile($dir));

        $b = $factory->createLock('fence-removed');
        $this->assertTrue($b->acquire(), 'the new file is free');
        $this->assertGreaterThan($first, $b->getFencingToken(), 'a token never repeats for a resource');
        $this->assertFalse($a->isAcquired(), 'A\'s file is gone: A is not the holder');
        $this->assertTrue($b->isAcquired());
        $b->release();
    }

    /**
     * Item 4: a symlink planted at the lock file's path made getFencingToken() write through it ("" became "1", a
     * pidfile "1234" became "1235").
     */
    public function testALockFileThatIsASymlinkIsRefusedAndItsTargetLeftAlone(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $probe = $factory->createLock('planted');
        $this->assertTrue($probe->acquire());
        $path = self::lockFile($dir);
        $probe->release();
        unset($probe);
        unlink($path);
        $target = $this->tempDir().'/app.pid';
        file_put_contents($target, '1234');
        symlink($target, $path);

        $lock = $factory->createLock('planted');
        try {
            $lock->acquire();
            $this->fail('a lock was taken through a symlink');
        } catch (LockAcquiringException $e) {
            $message = $e->getMessage().' '.$e->getPrevious()?->getMessage();
            $this->assertStringContainsString($path, $message);
            $this->assertStringContainsString('symbolic link', $message);
        }
        $this->assertSame('1234', file_get_contents($target), 'the target is untouched');
    }

    /** Item 4: nothing but a regular file is a lock file; a FIFO planted there must not block the open either. */
    public function testALockFileThatIsAFifoIsRefusedWithoutBlocking(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $probe = $factory->createLock('fifo');
        $this->assertTrue($probe->acquire());
        $path = self::lockFile($dir);
        $probe->release();
        unset($probe);
        unlink($path);
        $this->assertTrue(posix_mkfifo($path, 0666));

        $result = PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir'])))->createLock('fifo');
            try {
                $lock->acquire();
                echo "acquired\n";
            } catch (Deadbolt\Exception\LockAcquiringException $e) {
                echo $e->getPrevious()?->getMessage(), "\n";
            }
            PHP, ['dir' => $dir], timeout: 20.0);
        $this->assertStringContainsString('not a regular file', $result['stdout'], $result['stderr']);
    }

    /**
     * Item 8: with `ulimit -n 64`, locks taken until the descriptors ran out and then all released left up to 64 idle
     * lock files open, and every later acquire() (and PHP's own fopen()) failed with "Too many open files".
     */
    public function testReleasedLockFilesNeverStarveTheProcessOfDescriptors(): void
    {
        $result = PhpProcess::run(<<<'PHP'
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
            $held = [];
            try {
                for ($i = 0; $i < 200; ++$i) {
                    $lock = $factory->createLock("many-$i");
                    $lock->acquire();
                    $held[] = $lock;
                }
            } catch (Deadbolt\Exception\LockAcquiringException $e) {
                echo 'ran out after ', count($held), "\n";
            }
            foreach ($held as $lock) {
                $lock->release();
            }
            $held = [];
            $failed = 0;
            for ($i = 0; $i < 300; ++$i) {
                $lock = $factory->createLock("later-$i");
                try {
                    $lock->acquire() && $lock->release();
                } catch (Deadbolt\Exception\LockAcquiringException $e) {
                    ++$failed;
                }
            }
            echo "later cycles failed: $failed\n";
            $file = fopen($vars['dir'].'/plain.txt', 'w');
            echo false === $file ? "fopen failed\n" : "fopen works\n";
            PHP, ['dir' => $this->tempDir()], timeout: 60.0, command: ['bash', '-c', 'ulimit -n 64 && exec "$@"', 'bash', ...deadbolt_php_command()]);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertStringContainsString('ran out after', $result['stdout'], 'the descriptors did run out');
        $this->assertStringContainsString("later cycles failed: 0\nfopen works\n", $result['stdout'], $result['stderr']);
    }
}
