<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * Read/write locks across processes: readers coexist, a writer is alone.
 */
final class ReadersWritersTest extends DeadboltTestCase
{
    private const HOLD = <<<'PHP'
        $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir'])))->createLock($vars['resource']);
        $ok = 'read' === $vars['mode'] ? $lock->acquireRead(false) : $lock->acquire(false);
        echo $ok ? "holding\n" : "refused\n";
        fgets(STDIN);
        $lock->release();
        PHP;

    public function testReadersInDifferentProcessesCoexist(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $reader = $this->spawn(self::HOLD, ['dir' => $dir, 'resource' => $resource, 'mode' => 'read']);
        $this->assertSame('holding', $reader->readLine());

        $this->assertTrue(PhpProcess::canAcquire($dir, $resource, 'read'), 'a second reader process');
        $here = (new LockFactory(new FlockStore($dir)))->createLock($resource);
        $this->assertTrue($here->acquireRead(), 'a reader in this process');

        $this->assertFalse(PhpProcess::canAcquire($dir, $resource, 'write'), 'a writer process beside readers');
        $here->release();
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource, 'write'), 'a writer process beside the other reader');
        $reader->closeStdin();
        $this->assertSame(0, $reader->waitForExit(), $reader->stderr());
        $this->assertTrue(PhpProcess::canAcquire($dir, $resource, 'write'), 'a writer once all readers left');
    }

    public function testAWriterInAnotherProcessExcludesReadersAndWriters(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $writer = $this->spawn(self::HOLD, ['dir' => $dir, 'resource' => $resource, 'mode' => 'write']);
        $this->assertSame('holding', $writer->readLine());
        $here = (new LockFactory(new FlockStore($dir)))->createLock($resource);

        $this->assertFalse($here->acquireRead(), 'a reader here');
        $this->assertFalse($here->acquire(), 'a writer here');
        $this->assertFalse(PhpProcess::canAcquire($dir, $resource, 'read'), 'a reader process');

        $writer->closeStdin();
        $this->assertSame(0, $writer->waitForExit(), $writer->stderr());
        $this->assertTrue($here->acquireRead());
    }

    /**
     * Several processes take read and write locks in a loop and record when they held them (monotonic clock,
     * read inside the lock). Every writer interval must be disjoint from every other interval.
     */
    public function testNoWriterIntervalOverlapsAnyOtherHolder(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $rounds = 60;

        $children = [];
        for ($i = 0; $i < 4; ++$i) {
            $history = "$dir/history-$i";
            $children[] = $this->fork(static function (Channel $parent) use ($dir, $resource, $rounds, $i, $history): void {
                $lock = (new LockFactory(new FlockStore($dir)))->createLock($resource, 30.0);
                $parent->send('ready');
                $parent->receive();
                $lines = [];
                for ($n = 0; $n < $rounds; ++$n) {
                    $write = 0 === ($n + $i) % 3;
                    $write ? $lock->acquire(true) : $lock->acquireRead(true);
                    $start = hrtime(true);
                    usleep(200); // work done under the lock, to widen the windows; not a synchronisation
                    $end = hrtime(true);
                    $lock->release();
                    $lines[] = sprintf("%s %d %d\n", $write ? 'W' : 'R', $start, $end);
                }
                file_put_contents($history, implode('', $lines));
            });
        }
        foreach ($children as $child) {
            $this->assertSame('ready', $child->receive());
        }
        foreach ($children as $child) {
            $child->send('go');
        }
        foreach ($children as $child) {
            $child->wait(300.0);
        }

        $intervals = [];
        for ($i = 0; $i < 4; ++$i) {
            foreach (file("$dir/history-$i", FILE_IGNORE_NEW_LINES) ?: [] as $line) {
                [$mode, $start, $end] = explode(' ', $line);
                $intervals[] = [$mode, (int) $start, (int) $end, $i];
            }
        }
        $this->assertCount(4 * $rounds, $intervals);
        usort($intervals, static fn (array $a, array $b): int => $a[1] <=> $b[1]);

        $overlaps = [];
        foreach ($intervals as $a => $first) {
            foreach ($intervals as $b => $second) {
                if ($a >= $b || ('W' !== $first[0] && 'W' !== $second[0])) {
                    continue;
                }
                if ($first[1] < $second[2] && $second[1] < $first[2]) {
                    $overlaps[] = sprintf('%s by process %d overlaps %s by process %d', $first[0], $first[3], $second[0], $second[3]);
                }
            }
        }
        $this->assertSame([], $overlaps);
    }
}
