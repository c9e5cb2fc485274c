<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * 200k acquire/release cycles must not grow memory: neither PHP's heap nor the process (Rust allocations, fds).
 */
final class MemoryTest extends DeadboltTestCase
{
    private const WARM_UP = 10_000;
    private const CYCLES = 200_000;
    private const HEAP_BOUND = 64 * 1024;
    private const RSS_BOUND_KB = 4 * 1024;

    /**
     * Not under valgrind: valgrind's shadow memory grows the RSS on its own.
     *
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testAcquireReleaseCyclesDoNotLeak(): void
    {
        $factory = new LockFactory(new FlockStore($this->tempDir()));
        $resource = uniqid(__METHOD__, true);
        $reused = $factory->createLock($resource.'-reused', 30.0);

        $heap = $rss = $fds = [];
        for ($i = 1; $i <= self::CYCLES; ++$i) {
            // A new Lock (and Key) per cycle, and one Lock reused: both paths must give everything back.
            $lock = $factory->createLock($resource, 30.0);
            if (!$lock->acquire() || !$reused->acquire()) {
                $this->fail("cycle $i: acquire() refused a free lock");
            }
            $lock->release();
            $reused->release();
            if (self::WARM_UP === $i || self::CYCLES === $i) {
                unset($lock);
                gc_collect_cycles();
                $heap[] = memory_get_usage();
                $rss[] = self::rssKb();
                $fds[] = \count(scandir('/proc/self/fd') ?: []);
            }
        }

        $heapGrowth = $heap[1] - $heap[0];
        $rssGrowth = $rss[1] - $rss[0];
        $numbers = sprintf(
            'after %d cycles: heap %d B, RSS %d kB, fds %d; after %d: heap %d B, RSS %d kB, fds %d',
            self::WARM_UP, $heap[0], $rss[0], $fds[0], self::CYCLES, $heap[1], $rss[1], $fds[1]
        );
        $this->assertLessThan(self::HEAP_BOUND, $heapGrowth, "PHP heap grew by $heapGrowth B; $numbers");
        $this->assertLessThan(self::RSS_BOUND_KB, $rssGrowth, "RSS grew by $rssGrowth kB; $numbers");
        $this->assertSame($fds[0], $fds[1], "open file descriptors changed; $numbers");
    }

    private static function rssKb(): int
    {
        $status = (string) file_get_contents('/proc/self/status');
        if (1 !== preg_match('/^VmRSS:\s+(\d+) kB/m', $status, $match)) {
            throw new \RuntimeException('No VmRSS in /proc/self/status');
        }

        return (int) $match[1];
    }
}
