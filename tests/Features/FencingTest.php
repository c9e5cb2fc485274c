<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\LockFactory;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * `Lock::getFencingToken()`: null unless the lock is held exclusively; across processes, tokens strictly increase in
 * the order the lock was held. The judge is a history file every critical section appends one line to
 * ("pid token start_ns end_ns", hrtime = CLOCK_MONOTONIC, common to all processes of the machine).
 */
final class FencingTest extends FeatureTestCase
{
    public function testRedisTokensStrictlyIncreaseInHoldOrderAcrossProcesses(): void
    {
        $this->assertHistoryOfContenders('redis', SharedRedis::dsn(), 8, 200);
    }

    public function testFlockTokensStrictlyIncreaseInHoldOrderAcrossProcesses(): void
    {
        $this->assertHistoryOfContenders('flock', $this->tempDir(), 4, 100);
    }

    /**
     * @dataProvider fencingKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('fencingKinds')]
    public function testThereIsNoTokenUnlessTheLockIsHeldExclusively(string $kind): void
    {
        $factory = self::factoryFor($kind, $this->placeFor($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 60.0);

        $this->assertNull($lock->getFencingToken(), 'before acquire');
        $this->assertTrue($lock->acquire());
        $first = $lock->getFencingToken();
        $this->assertIsInt($first, 'while held exclusively');
        $this->assertGreaterThan(0, $first);
        $this->assertSame($first, $lock->getFencingToken(), 'one token per hold');
        $lock->refresh();
        $this->assertSame($first, $lock->getFencingToken(), 'a refresh keeps the hold and its token');
        $lock->release();
        $this->assertNull($lock->getFencingToken(), 'after release');

        $reader = $factory->createLock($resource, 60.0);
        $this->assertTrue($reader->acquireRead());
        $this->assertNull($reader->getFencingToken(), 'a read lock has none');
        $reader->release();
        $this->assertNull($reader->getFencingToken());

        $this->assertTrue($lock->acquire(), 'again');
        $second = $lock->getFencingToken();
        $this->assertIsInt($second);
        $this->assertGreaterThan($first, $second, 'the next exclusive hold has a greater token');
        // Demoted to a read lock: not exclusive any more.
        $this->assertTrue($lock->acquireRead());
        $this->assertNull($lock->getFencingToken(), 'demoted to shared');
        $lock->release();
        $this->assertNull($lock->getFencingToken());
    }

    /**
     * A lock inherited through fork() is inert in the child: it has no token, not even the one its parent drew.
     *
     * @dataProvider fencingKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('fencingKinds')]
    public function testAnInheritedLockHasNoTokenInTheChild(string $kind): void
    {
        $factory = self::factoryFor($kind, $this->placeFor($kind));
        $lock = $factory->createLock(uniqid(__METHOD__, true), 60.0);
        $this->assertTrue($lock->acquire());
        $token = $lock->getFencingToken();
        $this->assertIsInt($token);

        $child = $this->fork(static function (Channel $parent) use ($lock): void {
            $parent->send(var_export($lock->getFencingToken(), true));
        });
        $this->assertSame('NULL', $child->receive(), 'the child sees no token');
        $child->wait();
        $this->assertSame($token, $lock->getFencingToken(), 'the parent keeps its own');
        $lock->release();
    }

    public function testInMemoryTokensIncreaseInOneProcess(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $previous = 0;
        for ($i = 0; $i < 20; ++$i) {
            // A different Lock object each time, and the same one twice.
            $lock = $factory->createLock($resource, 60.0);
            foreach ([1, 2] as $round) {
                $this->assertTrue($lock->acquire(false));
                $token = $lock->getFencingToken();
                $this->assertIsInt($token);
                $this->assertGreaterThan($previous, $token, "hold $i.$round");
                $previous = $token;
                $lock->release();
            }
        }
    }

    /**
     * @param 'redis'|'flock' $kind
     */
    private function assertHistoryOfContenders(string $kind, string $place, int $processes, int $rounds): void
    {
        $resource = uniqid(__METHOD__, true);
        $history = $this->tempDir().'/history';
        touch($history);

        $children = [];
        for ($i = 0; $i < $processes; ++$i) {
            $children[] = $this->fork(static function (Channel $parent) use ($kind, $place, $resource, $history, $rounds): void {
                $lock = self::factoryFor($kind, $place)->createLock($resource, 60.0);
                $file = fopen($history, 'a');
                $pid = posix_getpid();
                $parent->send('ready');
                $parent->receive();
                for ($n = 0; $n < $rounds; ++$n) {
                    if (!$lock->acquire(true, 30.0)) {
                        throw new \RuntimeException("acquire(true, 30) returned false at round $n");
                    }
                    $start = hrtime(true);
                    $token = $lock->getFencingToken();
                    $end = hrtime(true);
                    if (!\is_int($token)) {
                        throw new \RuntimeException('no fencing token while held: '.var_export($token, true));
                    }
                    // One write of one line, in append mode: lines of different processes never mix.
                    fwrite($file, "$pid $token $start $end\n");
                    $lock->release();
                }
                fclose($file);
            });
        }
        foreach ($children as $child) {
            $this->assertSame('ready', $child->receive());
        }
        foreach ($children as $child) {
            $child->send('go');
        }
        foreach ($children as $child) {
            $child->wait(120.0);
        }

        $lines = file($history, FILE_IGNORE_NEW_LINES);
        $this->assertCount($processes * $rounds, $lines, 'one line per critical section');
        $entries = [];
        foreach ($lines as $line) {
            $this->assertMatchesRegularExpression('/^\d+ \d+ \d+ \d+$/', $line);
            [$pid, $token, $start, $end] = array_map('intval', explode(' ', $line));
            $entries[] = ['pid' => $pid, 'token' => $token, 'start' => $start, 'end' => $end];
        }
        $this->assertCount($processes, array_unique(array_column($entries, 'pid')), 'every process took part');
        $tokens = array_column($entries, 'token');
        $this->assertCount(\count($tokens), array_unique($tokens), 'all tokens are distinct');

        usort($entries, static fn (array $a, array $b): int => $a['start'] <=> $b['start']);
        for ($i = 1, $count = \count($entries); $i < $count; ++$i) {
            $before = $entries[$i - 1];
            $now = $entries[$i];
            $this->assertGreaterThan($before['end'], $now['start'], sprintf(
                'critical sections overlap: pid %d [%d, %d] and pid %d [%d, %d]',
                $before['pid'],
                $before['start'],
                $before['end'],
                $now['pid'],
                $now['start'],
                $now['end']
            ));
            $this->assertGreaterThan($before['token'], $now['token'], sprintf(
                'token %d (pid %d) came after token %d (pid %d) in hold order',
                $now['token'],
                $now['pid'],
                $before['token'],
                $before['pid']
            ));
        }
    }
}
