<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A fork while the parent's refresher thread waits for its next tick. The refresher once waited on a parking_lot
 * condvar, which parks the thread in a process-wide table: the child inherited that table with the parent's
 * thread still in it, pointing into thread-local memory that glibc frees when the child starts its own refresher,
 * and the child's refresher then wrote and read freed memory whenever its own wait hashed to the same bucket.
 * Many children, each with a differently shifted heap, make that collision all but certain; valgrind (run on the
 * child process itself where it is installed) reports any such access, and every child must also keep its own
 * short lock alive through its own refresher.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class RefresherAfterForkTest extends DeadboltTestCase
{
    private const CHILDREN = 32;

    public function testChildrenForkedWhileTheRefresherWaitsRunTheirOwnRefresherSafely(): void
    {
        $resource = uniqid('refresher-after-fork-', true);
        $result = $this->runChecked(<<<'PHP'
            // Until this process's refresher thread sleeps in its wait (best effort, bounded).
            function refresherParked(): void {
                $deadline = microtime(true) + 10.0;
                while (microtime(true) < $deadline) {
                    foreach (glob('/proc/self/task/*') ?: [] as $task) {
                        if ('deadbolt-refres' === trim((string) @file_get_contents($task.'/comm'))) {
                            $stat = (string) @file_get_contents($task.'/stat');
                            if ('S' === substr($stat, strrpos($stat, ')') + 2, 1)) {
                                return;
                            }
                        }
                    }
                    usleep(1000);
                }
            }

            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
            $parent = $factory->createLock($vars['resource'], 60.0, true, true);
            $parent->acquire();
            refresherParked();

            $pids = [];
            for ($i = 0; $i < $vars['children']; ++$i) {
                $pid = pcntl_fork();
                if (0 === $pid) {
                    $shift = [];
                    for ($j = 0; $j <= $i; ++$j) {
                        $shift[] = new Deadbolt\Key(str_repeat('k', 1 + 37 * $j));
                    }
                    $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
                    $long = $factory->createLock($vars['resource'].'-long-'.$i, 60.0, true, true);
                    $long->acquire();
                    refresherParked();
                    // Short enough to need its refresher, long enough that 33 processes starting at once
                    // on two cores leave the refresher its two thirds of the TTL to get one extension in
                    // (1 s once ran out in CI).
                    $short = $factory->createLock($vars['resource'].'-short-'.$i, 3.0, true, true);
                    $short->acquire();
                    usleep(3_500_000);
                    $ok = $short->isAcquired() && !$short->isExpired() && $long->isAcquired();
                    $short->release();
                    $long->release();
                    exit($ok ? 0 : 3);
                }
                $pids[] = $pid;
            }
            $failed = 0;
            foreach ($pids as $pid) {
                pcntl_waitpid($pid, $status);
                if (!pcntl_wifexited($status) || 0 !== pcntl_wexitstatus($status)) {
                    ++$failed;
                    fwrite(STDERR, "child $pid: status $status\n");
                }
            }
            $parent->release();
            echo "failed children: $failed\n";
            exit(0 === $failed ? 0 : 1);
            PHP, ['dsn' => SharedRedis::dsn(), 'resource' => $resource, 'children' => self::CHILDREN], timeout: 120.0);

        $this->assertSame("failed children: 0\n", $result['stdout'], 'stderr: '.$result['stderr']);
        $this->assertSame(0, $result['exit'], 'stderr: '.$result['stderr']);
    }
}
