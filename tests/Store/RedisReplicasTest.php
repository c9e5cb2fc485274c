<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\ReplicatedPair;
use PHPUnit\Framework\Attributes\DataProvider;

/**
 * `replicas=N|majority|all` on a DSN: a lock counts only once replicas acknowledged its write. A real primary with a
 * real replica (REPLICAOF); a replica frozen with SIGSTOP is one that acknowledges nothing.
 */
final class RedisReplicasTest extends DeadboltTestCase
{
    private RedisServer $primary;

    private RedisServer $replica;

    protected function setUp(): void
    {
        $pair = ReplicatedPair::start();
        $this->primary = $pair->primary;
        $this->replica = $pair->replica;
        Metrics::reset();
    }

    protected function tearDown(): void
    {
        $this->replica->stop();
        $this->primary->stop();
    }

    /** @return iterable<string, array{string}> */
    public static function wanted(): iterable
    {
        yield 'one' => ['1'];
        yield 'majority' => ['majority'];
        yield 'all' => ['all'];
    }

    /**
     * @dataProvider wanted
     */
    #[DataProvider('wanted')]
    public function testALockCountsOnceItsReplicaHasIt(string $wanted): void
    {
        $lock = $this->factory("?replicas=$wanted&replicas_timeout=20")->createLock('acked', 30);
        $this->assertTrue($lock->acquire());
        // WAIT returned: the replica has the write already, no polling for it.
        $this->assertSame(1, $this->replica->client()->exists('acked'));
        $lock->refresh(60);
        $this->assertGreaterThan(30_000, $this->replica->client()->pttl('acked'));
        $lock->release();
        $this->assertTrue($lock->acquire(true), 'a blocking acquire on a free key is acknowledged too');
        $lock->release();
        $this->assertSame(0, Metrics::snapshot()['counters']['unacknowledged']);
    }

    public function testALockNoReplicaAcknowledgedIsReleasedAndTheAcquireFails(): void
    {
        $lock = $this->factory('?replicas=1&replicas_timeout=0.2')->createLock('unacked', 30);
        $this->replica->pause();
        try {
            foreach (['acquire' => false, 'blocking acquire' => true] as $how => $blocking) {
                try {
                    $lock->acquire($blocking);
                    $this->fail("$how: an acquire no replica acknowledged succeeded");
                } catch (LockAcquiringException $e) {
                    $storage = $e->getPrevious();
                    $this->assertInstanceOf(LockStorageException::class, $storage, $how);
                    $this->assertStringContainsString('only 0 of the 1 replicas wanted acknowledged it within 0.2 s', $storage->getMessage(), $how);
                    $this->assertStringContainsString('it was released', $storage->getMessage(), $how);
                    $this->assertSame(1, substr_count($storage->getMessage(), '"unacked"'), $storage->getMessage());
                }
                $this->assertFalse($lock->isAcquired(), $how);
                $this->assertSame(0, $this->primary->client()->exists('unacked'), "$how: nothing is left on the primary");
            }
            $this->assertSame(2, Metrics::snapshot()['counters']['unacknowledged']);
        } finally {
            $this->replica->resume();
        }
        // A replica woken from SIGSTOP first catches up with the primary, which may take longer than 0.2 s.
        $deadline = microtime(true) + 20;
        while (true) {
            try {
                $this->assertTrue($lock->acquire(), 'once the replica answers again, the same objects work');
                break;
            } catch (LockAcquiringException $e) {
                $this->assertLessThan($deadline, microtime(true), 'the replica never acknowledged again: '.$e->getPrevious()?->getMessage());
                usleep(50_000);
            }
        }
        $lock->release();
    }

    /**
     * A deadline shorter than replicas_timeout bounds the acknowledgement too: the reply comes before the socket's
     * own (deadline-capped) timeout, so the lock written is released rather than left behind with a lost reply.
     */
    public function testADeadlineShorterThanTheAcknowledgementLeavesNothingHeld(): void
    {
        $lock = $this->factory('?replicas=1&replicas_timeout=5')->createLock('bounded', 30);
        $this->replica->pause();
        try {
            try {
                $acquired = $lock->acquire(true, 0.3);
                $this->fail('acquired without any acknowledgement: '.json_encode($acquired));
            } catch (LockAcquiringException $e) {
                $this->assertStringContainsString('only 0 of the 1 replicas', (string) $e->getPrevious()?->getMessage());
            }
            $this->assertSame(0, $this->primary->client()->exists('bounded'), 'nothing is left on the primary');
            $this->assertFalse($lock->isAcquired());
        } finally {
            $this->replica->resume();
        }
    }

    public function testARefreshNoReplicaAcknowledgedFailsAndReleases(): void
    {
        $lock = $this->factory('?replicas=1&replicas_timeout=2')->createLock('refreshed', 30);
        $this->assertTrue($lock->acquire());
        $this->replica->pause();
        try {
            $this->expectException(LockAcquiringException::class);
            try {
                $lock->refresh();
            } finally {
                $this->assertSame(0, $this->primary->client()->exists('refreshed'));
                $this->assertSame(1, Metrics::snapshot()['counters']['unacknowledged']);
            }
        } finally {
            $this->replica->resume();
        }
    }

    /**
     * The releaser's connection writes a lock it hands over, and WAIT counts a connection's own writes only: before
     * the waiter's claim (a write of its own), this waiter got the lock with the replica frozen.
     */
    public function testALockHandedOverIsAcknowledgedBeforeTheWaiterHasIt(): void
    {
        $holder = $this->factory('')->createLock('handed', 30);
        $this->assertTrue($holder->acquire());
        $waiter = PhpProcess::start(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock('handed', 30);
            try {
                $lock->acquire(true);
                echo 'acquired ', json_encode($lock->isAcquired()), "\n";
            } catch (Deadbolt\Exception\LockAcquiringException $e) {
                echo 'refused ', $e->getPrevious()?->getMessage(), "\n";
            }
            PHP, ['dsn' => $this->primary->dsn('?replicas=1&replicas_timeout=0.3')]);
        $primary = $this->primary->client();
        $deadline = microtime(true) + 20;
        while (0 === $primary->exists('handed#deadbolt:queue{handed}')) {
            $this->assertLessThan($deadline, microtime(true), 'the waiter never joined the queue');
            usleep(10_000);
        }
        $this->replica->pause();
        try {
            $holder->release();
            $outcome = $waiter->readLine();
            $this->assertSame(0, $waiter->waitForExit(), $waiter->stderr());
        } finally {
            $this->replica->resume();
        }
        $this->assertStringStartsWith('refused ', $outcome);
        $this->assertStringContainsString('only 0 of the 1 replicas', $outcome);
        $this->assertSame(0, $primary->exists('handed'), 'the lock handed over and not acknowledged was released');
    }

    public function testMajorityOrAllOfAPrimaryWithoutReplicasIsNeverMet(): void
    {
        $this->replica->client()->rawCommand('REPLICAOF', 'NO', 'ONE');
        $alone = RedisServer::start();
        try {
            $lock = (new LockFactory(new RedisStore($alone->dsn('?replicas=all&replicas_timeout=0.1'))))->createLock('alone', 30);
            $this->expectException(LockAcquiringException::class);
            $this->expectExceptionMessage('Failed to acquire');
            $lock->acquire();
        } finally {
            $alone->stop();
        }
    }

    public function testBadReplicaOptionsAreRefusedByName(): void
    {
        foreach (['?replicas=0' => 'replicas must be a positive number', '?replicas=most' => 'replicas must be a positive number', '?replicas_timeout=1' => 'replicas_timeout needs replicas', '?replicas=1&replicas_timeout=-1' => 'replicas_timeout'] as $query => $message) {
            try {
                new RedisStore($this->primary->dsn($query));
                $this->fail("$query was accepted");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString($message, $e->getMessage(), $query);
            }
        }
    }

    private function factory(string $query): LockFactory
    {
        return new LockFactory(new RedisStore($this->primary->dsn($query)));
    }
}
