<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * FlockStore keeps a released lock file open for the next cycle on the same resource in the same process. A
 * kept file must never weaken exclusion: two Locks of one process, a lock file removed or replaced while it was
 * kept, and a forked child that inherits the kept descriptor all still get exactly one holder.
 */
final class FlockFileReuseTest extends DeadboltTestCase
{
    public function testTwoLocksOfOneProcessExcludeEachOtherOnAKeptFile(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $a = $factory->createLock('reused');
        $b = $factory->createLock('reused');
        $this->assertTrue($a->acquire(false));
        $a->release();

        $this->assertTrue($a->acquire(false), 'on the kept file');
        $this->assertFalse($b->acquire(false), 'a second Lock of the process is refused');
        $this->assertFalse(PhpProcess::canAcquire($dir, 'reused'));
        $a->release();
        $this->assertTrue($b->acquire(false));
        $this->assertFalse($a->acquire(false), 'the first Lock is refused while the second holds');
        $this->assertFalse(PhpProcess::canAcquire($dir, 'reused'));
        $b->release();
        $this->assertTrue(PhpProcess::canAcquire($dir, 'reused'));
    }

    /**
     * @return iterable<string, array{'remove'|'replace'}>
     */
    public static function fileChanges(): iterable
    {
        yield 'removed' => ['remove'];
        yield 'replaced' => ['replace'];
    }

    /**
     * The lock file is removed (as a temp cleaner does) or replaced while this process keeps it open, and another
     * process locks the file now at the path: a lock on the kept file would exclude nobody.
     *
     * @dataProvider fileChanges
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('fileChanges')]
    public function testAKeptFileThatIsNoLongerAtItsPathGivesNoSecondHolder(string $change): void
    {
        $dir = $this->tempDir();
        $lock = (new LockFactory(new FlockStore($dir)))->createLock('changed');
        $this->assertTrue($lock->acquire(false));
        $lock->release();
        $files = glob($dir.'/*.lock') ?: [];
        $this->assertCount(1, $files);
        if ('remove' === $change) {
            unlink($files[0]);
        } else {
            file_put_contents($dir.'/new', '');
            rename($dir.'/new', $files[0]);
        }

        $holder = $this->spawn(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir'])))->createLock('changed');
            echo $lock->acquire(false) ? "held\n" : "refused\n";
            fgets(STDIN);
            PHP, ['dir' => $dir]);
        $this->assertSame('held', $holder->readLine());

        $this->assertFalse($lock->acquire(false), 'the other process holds the file at the path');
        $holder->closeStdin();
        $this->assertSame(0, $holder->waitForExit());
        $this->assertTrue($lock->acquire(false));
        $this->assertFalse(PhpProcess::canAcquire($dir, 'changed'), 'and it is the file at the path that is locked');
        $lock->release();
    }

    /**
     * The parent locks its kept file again after a fork: the child, which inherited that descriptor, must open its
     * own rather than share the parent's lock.
     */
    public function testAForkedChildDoesNotShareItsParentsKeptFile(): void
    {
        $dir = $this->tempDir();
        $factory = new LockFactory(new FlockStore($dir));
        $lock = $factory->createLock('forked');
        $this->assertTrue($lock->acquire(false));
        $lock->release();

        $child = $this->fork(static function (Channel $parent) use ($factory): void {
            $parent->receive();
            $mine = $factory->createLock('forked');
            $parent->send($mine->acquire(false) ? 'held' : 'refused');
            $parent->receive();
            $parent->send($mine->acquire(false) ? 'held' : 'refused');
            $parent->receive();
        });
        $this->assertTrue($lock->acquire(false));
        $child->send('try');
        $this->assertSame('refused', $child->receive(), 'the parent holds it');
        $lock->release();
        $child->send('try again');
        $this->assertSame('held', $child->receive());
        $this->assertFalse($lock->acquire(false), 'the child holds it');
        $child->send('done');
        $child->wait();
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    /**
     * A Key dropped while it holds its lock frees the lock, even while a forked child (which never touched the Key)
     * still has a copy of its descriptor. Before, the child's copy kept the lock held until the child exited.
     */
    public function testADroppedKeyFreesItsLockWhileAForkedChildLives(): void
    {
        $dir = $this->tempDir();
        $store = new FlockStore($dir);
        $key = new Key('dropped');
        $store->save($key);

        $child = $this->fork(static function (Channel $parent): void {
            $parent->receive();
        });
        unset($key);

        $this->assertTrue(PhpProcess::canAcquire($dir, 'dropped'));
        $child->send('done');
        $child->wait();
    }
}
