<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Tests\Support\Channel;

/**
 * `acquire(bool $blocking, ?float $timeout)` / `acquireRead(...)`: a wait with a deadline on a lock another process
 * holds ends in false, never before the deadline (monotonic clock), without spinning; 0 is one try; a bad timeout is
 * refused; and a wait (with or without deadline) gets the lock once the holder lets it go.
 *
 * The only clock assertions are "not before the deadline" (correctness of the deadline) and the CPU the waiting
 * process burned (getrusage of the whole process, its helper threads included) against a generous bound.
 */
final class DeadlineTest extends FeatureTestCase
{
    private const DEADLINE = 0.3;

    /** A waiting process may use at most this share of the waited wall time. */
    private const CPU_SHARE = 0.2;

    private const TIMED_OUT = 'Failed to acquire the "{resource}" lock within {timeout} seconds.';

    /**
     * Not under valgrind: CPU time measured under valgrind says nothing about spinning.
     *
     * @dataProvider allKinds
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('allKinds')]
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testATimedWaitOnAHeldLockEndsInFalseNotBeforeItsDeadlineAndWithoutSpinning(string $kind): void
    {
        $this->whileHeldElsewhere($kind, function (LockFactory $factory, string $resource): void {
            foreach ([['acquire', false], ['acquire', true], ['acquireRead', false], ['acquireRead', true]] as [$method, $blocking]) {
                $call = sprintf('%s(%s, %s)', $method, var_export($blocking, true), self::DEADLINE);
                $lock = $factory->createLock($resource, 60.0);
                $logger = new RecordingLogger();
                $lock->setLogger($logger);

                $cpu = self::cpuSeconds();
                $start = hrtime(true);
                $acquired = $lock->$method($blocking, self::DEADLINE);
                $waited = self::since($start);
                $burned = self::cpuSeconds() - $cpu;

                $this->assertFalse($acquired, "$call on a held lock");
                $this->assertGreaterThanOrEqual(self::DEADLINE, $waited, "$call returned before its deadline");
                $this->assertLessThan(self::CPU_SHARE * $waited, $burned, sprintf(
                    '%s used %.3f s of CPU during a %.3f s wait: it spins',
                    $call,
                    $burned,
                    $waited
                ));
                $this->assertFalse($lock->isAcquired(), "$call left nothing held");
                $this->assertSame([['info', self::TIMED_OUT]], array_map(static fn (array $r): array => [$r[0], $r[1]], $logger->records), "$call logs a timeout");
                $this->assertSame(['resource', 'wait', 'timeout'], array_keys($logger->records[0][2]));
                $this->assertSame($resource, $logger->records[0][2]['resource']);
            }
        });
    }

    /**
     * @dataProvider allKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('allKinds')]
    public function testATimeoutOfZeroIsOneNonBlockingTry(string $kind): void
    {
        $this->whileHeldElsewhere($kind, function (LockFactory $factory, string $resource): void {
            $before = Metrics::snapshot()['counters'];
            foreach ([['acquire', false], ['acquire', true], ['acquireRead', false], ['acquireRead', true]] as [$method, $blocking]) {
                $lock = $factory->createLock($resource, 60.0);
                // A wait here would last until the holder gives up (60 s) and then succeed: the assertion catches it.
                $this->assertFalse($lock->$method($blocking, 0.0), "$method(".var_export($blocking, true).', 0) on a held lock');
                $this->assertFalse($lock->$method($blocking, 0), "$method(".var_export($blocking, true).', 0) (int 0)');
            }
            $after = Metrics::snapshot()['counters'];
            $this->assertSame(8, $after['conflicts'] - $before['conflicts'], 'each try counts as a conflict');
            $this->assertSame(0, $after['timeouts'] - $before['timeouts'], 'no try counts as a wait that timed out');
        });
        // And on a free lock the one try takes it.
        $place = $this->placeFor($kind);
        $lock = self::factoryFor($kind, $place)->createLock(uniqid(__METHOD__, true), 60.0);
        $this->assertTrue($lock->acquire(true, 0.0), 'acquire(true, 0) of a free lock');
        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertTrue($lock->acquireRead(false, 0.0), 'acquireRead(false, 0) of a free lock');
        $lock->release();
    }

    /**
     * @return iterable<string, array{'flock'|'redis'|'memory', float}>
     */
    public static function invalidTimeouts(): iterable
    {
        foreach (self::allKinds() as $name => [$kind]) {
            yield "$name, -0.001" => [$kind, -0.001];
            yield "$name, -1" => [$kind, -1.0];
            yield "$name, NAN" => [$kind, NAN];
            yield "$name, INF" => [$kind, INF];
            yield "$name, -INF" => [$kind, -INF];
        }
    }

    /**
     * @dataProvider invalidTimeouts
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTimeouts')]
    public function testANegativeOrNonFiniteTimeoutIsRefusedAndTakesNothing(string $kind, float $timeout): void
    {
        $lock = self::factoryFor($kind, $this->placeFor($kind))->createLock(uniqid(__METHOD__, true), 60.0);
        foreach ([['acquire', false], ['acquire', true], ['acquireRead', false], ['acquireRead', true]] as [$method, $blocking]) {
            $call = sprintf('%s(%s, %s)', $method, var_export($blocking, true), var_export($timeout, true));
            try {
                $lock->$method($blocking, $timeout);
                $this->fail("$call did not throw");
            } catch (InvalidArgumentException $e) {
                $this->assertNotSame('', $e->getMessage(), $call);
            }
            $this->assertFalse($lock->isAcquired(), "$call took the free lock anyway");
        }
    }

    /**
     * @return iterable<string, array{'flock'|'redis', 'acquire'|'acquireRead', bool, float|null}>
     */
    public static function waitsThatSucceed(): iterable
    {
        foreach (self::sharedKinds() as $name => [$kind]) {
            yield "$name, acquire(true) waits forever" => [$kind, 'acquire', true, null];
            yield "$name, acquireRead(true) waits forever" => [$kind, 'acquireRead', true, null];
            yield "$name, acquire(true, 5)" => [$kind, 'acquire', true, 5.0];
            yield "$name, acquire(false, 5)" => [$kind, 'acquire', false, 5.0];
            yield "$name, acquireRead(false, 5)" => [$kind, 'acquireRead', false, 5.0];
        }
    }

    /**
     * The holder says "releasing" on the pipe just before it releases: when the wait returns true, that message is
     * already there, so the lock was taken after the holder let it go (not stolen, not a false success).
     *
     * @dataProvider waitsThatSucceed
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('waitsThatSucceed')]
    public function testAWaitGetsTheLockOnceTheHolderReleasesIt(string $kind, string $method, bool $blocking, ?float $timeout): void
    {
        $place = $this->placeFor($kind);
        $resource = uniqid(__METHOD__, true);
        $waiterPid = posix_getpid();
        $holder = $this->fork(function (Channel $parent) use ($kind, $place, $resource, $waiterPid): void {
            $lock = self::factoryFor($kind, $place)->createLock($resource, 120.0);
            $this->assertTrue($lock->acquire(false));
            $parent->send('holding');
            $this->assertSame('waiting', $parent->receive());
            self::waitUntilSleeping($waiterPid);
            $parent->send('releasing');
            $lock->release();
            $this->assertSame('bye', $parent->receive(60.0));
        });
        $this->assertSame('holding', $holder->receive());

        $lock = self::factoryFor($kind, $place)->createLock($resource, 60.0);
        $this->assertFalse($lock->$method(false), 'the holder has it');
        $holder->send('waiting');
        $acquired = null === $timeout ? $lock->$method($blocking) : $lock->$method($blocking, $timeout);

        $this->assertTrue($acquired, 'the wait ends with the lock');
        $this->assertTrue($holder->channel->hasPending(), 'the holder had started releasing before the wait returned');
        $this->assertSame('releasing', $holder->receive());
        $this->assertTrue($lock->isAcquired());
        $holder->send('bye');
        $holder->wait(10.0);
        $this->assertTrue($lock->isAcquired(), 'still held after the former holder exited');
        $lock->release();
    }
}
