<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * The background refresher (`createLock(..., autoRefresh: true, maxHold: ...)`) and `Lock::isLost()`.
 *
 * The judge of "still held" is always another process trying to take the lock (or Redis itself); the holder sleeps
 * in PHP (usleep or a blocking read), so only the extension's own thread can keep the lock alive. Durations are
 * multiples of the TTL chosen so that the outcome does not depend on scheduling by more than a few hundred ms.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class RefresherTest extends FeatureTestCase
{
    private const TTL = 0.5;

    /** 3x TTL. */
    private const SLEEP_US = 1_500_000;

    public function testAnAutoRefreshedLockOutlivesItsTtlWhileThePhpCodeSleeps(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $holder = $this->fork(function (Channel $parent) use ($dsn, $resource): void {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, self::TTL, true, true);
            $this->assertTrue($lock->acquire());
            $parent->send('holding');
            usleep(self::SLEEP_US);
            $parent->send(serialize(['acquired' => $lock->isAcquired(), 'lost' => $lock->isLost()]));
            $this->assertSame('bye', $parent->receive());
            $lock->release();
        });
        $this->assertSame('holding', $holder->receive());
        $start = hrtime(true);

        $competitor = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 30.0);
        $checks = [];
        while (!$holder->channel->hasPending()) {
            $this->assertFalse($competitor->acquire(false), sprintf('the competitor took the lock %.2f s into a 3x TTL sleep of the holder', self::since($start)));
            $this->assertGreaterThan(0, SharedRedis::client()->pTtl($resource), 'the key is in Redis with an expiry');
            $checks[] = self::since($start);
            usleep(100_000);
        }
        $this->assertGreaterThanOrEqual(5, \count($checks), 'several checks during the sleep');
        $this->assertGreaterThan(2 * self::TTL, max($checks), 'checks went on well past the TTL');

        $state = unserialize($holder->receive());
        $this->assertTrue($state['acquired'], 'the holder still holds after 3x TTL');
        $this->assertFalse($state['lost'], 'and the lock is not lost');
        $holder->send('bye');
        $holder->wait(10.0);
        $this->assertTrue($competitor->acquire(false), 'free once the holder released');
        $competitor->release();
    }

    public function testWithoutAutoRefreshTheLockRunsOutAfterItsTtl(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $holder = $this->fork(function (Channel $parent) use ($dsn, $resource): void {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, self::TTL, true, false);
            $this->assertTrue($lock->acquire());
            $parent->send('holding');
            $this->assertSame('check', $parent->receive());
            $parent->send(serialize(['acquired' => $lock->isAcquired(), 'lost' => $lock->isLost()]));
        });
        $this->assertSame('holding', $holder->receive());

        $competitor = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 30.0);
        $this->assertTrue($competitor->acquire(true, 10.0), 'the competitor gets the lock once the TTL ran out');
        $holder->send('check');
        $state = unserialize($holder->receive());
        $this->assertFalse($state['acquired'], 'the holder lost it to its TTL');
        $this->assertFalse($state['lost'], 'isLost() is about the refresher, which this lock does not have');
        $holder->wait(10.0);
        $competitor->release();
    }

    public function testMaxHoldStopsTheRefreshingAndTheLockRunsOut(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $holder = $this->fork(function (Channel $parent) use ($dsn, $resource): void {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 0.3, true, true, 0.6);
            $this->assertTrue($lock->acquire());
            $parent->send('holding');
            $this->assertSame('check', $parent->receive());
            $parent->send(serialize(['acquired' => $lock->isAcquired()]));
        });
        $this->assertSame('holding', $holder->receive());
        $start = hrtime(true);

        $competitor = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 30.0);
        // Past the TTL but before maxHold: refreshed every TTL/3, it is still there.
        usleep(450_000);
        $this->assertFalse($competitor->acquire(false), sprintf('taken %.2f s after the acquisition: not refreshed before maxHold', self::since($start)));
        // maxHold (0.6) + TTL (0.3) is 0.9 s after the acquisition; 1.5 s leaves a wide margin.
        usleep(max(0, 1_500_000 - (int) (self::since($start) * 1e6)));
        $this->assertTrue($competitor->acquire(false), sprintf('still held %.2f s after the acquisition: refreshed beyond maxHold', self::since($start)));
        $holder->send('check');
        $this->assertFalse(unserialize($holder->receive())['acquired'], 'the holder no longer has it');
        $holder->wait(10.0);
        $competitor->release();
    }

    /**
     * While the refresher keeps a lock alive, the lock's and its Key's lifetime follow it: a program that checks
     * ownership before a side effect (isExpired(), getRemainingLifetime()) sees the lock as alive, not expired after
     * its first TTL.
     */
    /** The refresher's extensions reach the logger with the next call on the lock (it cannot log from its thread). */
    public function testTheRefreshersExtensionsReachTheLogger(): void
    {
        $lock = (new LockFactory(new RedisStore(SharedRedis::dsn())))->createLock(uniqid(__METHOD__, true), 0.3, true, true);
        $logger = new RecordingLogger();
        $lock->setLogger($logger);
        $this->assertTrue($lock->acquire());
        usleep(1_000_000); // three TTLs and more
        $logger->records = [];
        $lock->release();

        $this->assertSame('debug', $logger->records[0][0]);
        $this->assertSame('Expiration of the "{resource}" lock put off {count} times in the background.', $logger->records[0][1]);
        $this->assertGreaterThanOrEqual(1, $logger->records[0][2]['count']);
        $this->assertSame('Successfully released the "{resource}" lock.', $logger->records[1][1]);
    }

    public function testTheLifetimeFollowsTheRefresher(): void
    {
        $key = new \Deadbolt\Key(uniqid(__METHOD__, true));
        $lock = (new LockFactory(new RedisStore(SharedRedis::dsn())))->createLockFromKey($key, 0.3, true, true);
        $this->assertTrue($lock->acquire());
        usleep(1_000_000); // three TTLs and more
        $this->assertFalse($lock->isLost());
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse($lock->isExpired(), 'Lock::isExpired()');
        $this->assertGreaterThan(0.0, $lock->getRemainingLifetime(), 'Lock::getRemainingLifetime()');
        $this->assertFalse($key->isExpired(), 'Key::isExpired()');
        $this->assertGreaterThan(0.0, $key->getRemainingLifetime(), 'Key::getRemainingLifetime()');
        $lock->release();
    }

    /**
     * An explicit refresh(ttl) during an auto-refreshed hold is what the refresher goes on with: it never shortens
     * the lock back to the factory's TTL, so when maxHold stops the refreshing the lock lasts as long as its holder
     * is told, and nobody else can take it meanwhile.
     */
    public function testAnExplicitRefreshIsWhatTheRefresherKeeps(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 0.3, true, true, 0.6);
        $this->assertTrue($lock->acquire());
        $lock->refresh(30.0);
        usleep(1_000_000); // past maxHold, and past the factory's TTL since the last refresh
        $this->assertGreaterThan(25.0, $lock->getRemainingLifetime());
        $this->assertGreaterThan(25_000, $this->redisPttl($resource), 'Redis agrees');
        $competitor = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 30.0);
        $this->assertFalse($competitor->acquire(), 'nobody else takes it');
        $lock->release();
    }

    /**
     * A clean release() that lands while the refresher is extending that very lock is neither a loss nor a failed
     * refresh: the metrics operators watch stay at zero. (Fifty locks due together keep the refresher busy through
     * the moment they are released, so some releases always overtake their extension.)
     */
    public function testReleasesThatMeetTheRefresherAreNoLossAndNoFailure(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $worker = $this->fork(static function (Channel $parent) use ($dsn, $resource): void {
            Metrics::reset();
            $factory = new LockFactory(new RedisStore($dsn));
            for ($round = 0; $round < 4; ++$round) {
                $locks = [];
                for ($i = 0; $i < 50; ++$i) {
                    $locks[$i] = $factory->createLock("$resource:$round:$i", 0.3, true, true);
                    $locks[$i]->acquire();
                }
                usleep(100_000); // the first refresh is due a third of the TTL after each acquire
                foreach ($locks as $lock) {
                    $lock->release();
                }
            }
            $counters = Metrics::snapshot()['counters'];
            $parent->send(json_encode([$counters['lost'], $counters['refresh_failed'], $counters['released']]));
        });
        [$lost, $failed, $released] = json_decode($worker->receive(), true);
        $worker->wait();
        $this->assertSame(200, $released);
        $this->assertSame(0, $lost, 'lost');
        $this->assertSame(0, $failed, 'refresh_failed');
    }

    public function testARedisOutageLosesTheLockAndRefreshAndReleaseSaySo(): void
    {
        $server = RedisServer::start();
        $dsn = $server->dsn();
        $resource = uniqid(__METHOD__, true);
        $holder = $this->fork(function (Channel $parent) use ($dsn, $resource): void {
            Metrics::reset();
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, self::TTL, true, true);
            $logger = new RecordingLogger();
            $lock->setLogger($logger);
            $this->assertTrue($lock->acquire());
            $this->assertFalse($lock->isLost());
            $parent->send('holding');
            $this->assertSame('stopped', $parent->receive());
            usleep(self::SLEEP_US);

            $this->assertTrue($lock->isLost(), 'lost once the TTL passed without a refresh');
            foreach (['refresh', 'release'] as $method) {
                try {
                    $lock->$method();
                    $this->fail("$method() of a lost lock did not throw");
                } catch (LockExpiredException $e) {
                    $this->assertSame(LockExpiredException::class, $e::class, "$method(): LockExpiredException itself");
                    $this->assertNull($e->getPrevious(), "$method(): not wrapping a connection error");
                }
                if ('refresh' === $method) {
                    $this->assertTrue($lock->isLost(), 'still lost after the refused refresh()');
                }
            }
            // What the refresher went through reaches the logger with the next call: its failures, and the loss once.
            $messages = array_map(static fn (array $r): string => $r[0].' '.$r[1], $logger->records);
            $this->assertContains('notice Failed {count} times to put off the expiration of the "{resource}" lock in the background.', $messages);
            $lost = 'warning The "{resource}" lock was lost: the background refresher found it expired or taken by someone else.';
            $this->assertSame(1, count(array_keys($messages, $lost, true)), 'the loss is logged once: '.implode("\n", $messages));
            $counters = Metrics::snapshot()['counters'];
            $this->assertSame(1, $counters['lost'], 'one lock found gone: '.json_encode($counters));
            $this->assertGreaterThanOrEqual(1, $counters['refresh_failed'], 'the refresher\'s failures are counted: '.json_encode($counters));
            $this->assertGreaterThanOrEqual(1, $counters['store_errors'], 'the unreachable store is counted: '.json_encode($counters));
            $this->assertSame(0, $counters['released'], 'a release() that threw is not a successful release (API-CONTRACT: "released once per successful release"): '.json_encode($counters));
            $parent->send('done');
        });
        $this->assertSame('holding', $holder->receive());
        $server->stop();
        $holder->send('stopped');
        $this->assertSame('done', $holder->receive(30.0));
        $holder->wait(10.0);
    }

    /**
     * Issue 25, item 1: the refresher extended one store after another, so a store that stopped answering (SIGSTOP,
     * a 20 s read timeout) held up every other store's extensions and their locks ran out while isLost() said false.
     */
    public function testAStalledStoreDelaysOnlyItsOwnLocksAndTheirLossIsToldAtTheirExpiry(): void
    {
        $stalled = RedisServer::start();
        $healthy = RedisServer::start();
        $ttl = 2.0;
        $before = Metrics::snapshot()['counters']['lost'];
        $lockA = (new LockFactory(new RedisStore($stalled->dsn('?read_timeout=20'))))
            ->createLock(uniqid('stalled', true), $ttl, true, true);
        $resourceB = uniqid('healthy', true);
        $lockB = (new LockFactory(new RedisStore($healthy->dsn())))->createLock($resourceB, $ttl, true, true);
        $this->assertTrue($lockA->acquire());
        $this->assertTrue($lockB->acquire());

        $stalled->pause();
        $paused = hrtime(true);
        $observer = $healthy->client();
        // 4x the TTL: every extension of lock A after the pause hangs for its 20 s read timeout meanwhile.
        while (self::since($paused) < 4 * $ttl) {
            $this->assertGreaterThan(0, $observer->pTtl($resourceB), sprintf('lock B is in its Redis %.2f s after the other store stalled', self::since($paused)));
            $this->assertFalse($lockB->isLost());
            // No extension of A can have been confirmed after the pause, so A's expiry is at most a TTL after it
            // (the extra half second: SIGSTOP reaches the server a moment after kill() returns).
            if (self::since($paused) > $ttl + 0.5) {
                $this->assertTrue($lockA->isLost(), sprintf('lock A is lost %.2f s after its store stalled, past its TTL', self::since($paused)));
            }
            usleep(200_000);
        }
        $this->assertTrue($lockA->isLost());
        $this->assertTrue($lockB->isAcquired(), 'lock B is still held');
        $this->assertSame($before + 1, Metrics::snapshot()['counters']['lost'], 'lock A counted lost, once; lock B not');
        $lockB->release();
        $stalled->resume();
        try {
            $lockA->release();
        } catch (LockExpiredException) {
            // A lost lock's release says so.
        }
        $stalled->stop();
        $healthy->stop();
    }

    public function testAutoRefreshIsRefusedOnARedisStoreOverAPhpClient(): void
    {
        $clients = [
            '\Redis' => SharedRedis::newPhpRedis(),
            'Predis' => SharedRedis::newPredis(),
        ];
        foreach ($clients as $name => $client) {
            $factory = new LockFactory(new RedisStore($client));
            try {
                $factory->createLock(uniqid(__METHOD__, true), 30.0, true, true);
                $this->fail("createLock(autoRefresh: true) on a RedisStore over $name did not throw");
            } catch (InvalidArgumentException $e) {
                $this->assertNotSame('', $e->getMessage());
            }
            try {
                $factory->createLockFromKey(new Key(uniqid(__METHOD__, true)), 30.0, true, true);
                $this->fail("createLockFromKey(autoRefresh: true) on a RedisStore over $name did not throw");
            } catch (InvalidArgumentException $e) {
                $this->assertNotSame('', $e->getMessage());
            }
            // Without autoRefresh the same store works.
            $lock = $factory->createLock(uniqid(__METHOD__, true), 30.0);
            $this->assertTrue($lock->acquire());
            $lock->release();
        }
    }

    /**
     * @dataProvider allKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('allKinds')]
    public function testAutoRefreshWithoutATtlIsRefused(string $kind): void
    {
        $factory = self::factoryFor($kind, $this->placeFor($kind));
        try {
            $factory->createLock(uniqid(__METHOD__, true), null, true, true);
            $this->fail('createLock(ttl: null, autoRefresh: true) did not throw');
        } catch (InvalidArgumentException $e) {
            $this->assertNotSame('', $e->getMessage());
        }
        try {
            $factory->createLockFromKey(new Key(uniqid(__METHOD__, true)), null, true, true);
            $this->fail('createLockFromKey(ttl: null, autoRefresh: true) did not throw');
        } catch (InvalidArgumentException $e) {
            $this->assertNotSame('', $e->getMessage());
        }
        // Without autoRefresh, no TTL is fine (symfony/lock).
        $this->assertTrue($factory->createLock(uniqid(__METHOD__, true), null, true, false)->acquire());
    }

    /**
     * @return iterable<string, array{'flock'|'memory'}>
     */
    public static function neverExpiringKinds(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'InMemoryStore' => ['memory'];
    }

    /**
     * @dataProvider neverExpiringKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('neverExpiringKinds')]
    public function testAutoRefreshOnAStoreWhoseLocksNeverExpireIsAcceptedAndHarmless(string $kind): void
    {
        $place = $this->placeFor($kind);
        $resource = uniqid(__METHOD__, true);
        $factory = self::factoryFor($kind, $place);
        $lock = $factory->createLock($resource, 0.2, true, true, 0.3);
        $this->assertTrue($lock->acquire());
        usleep(500_000);
        $this->assertTrue($lock->isAcquired(), 'held past TTL and maxHold: these locks never expire');
        $this->assertFalse($lock->isLost());
        $this->assertNull($lock->getRemainingLifetime());
        $this->assertFalse($factory->createLock($resource)->acquire(false), 'another lock is refused');
        if ('flock' === $kind) {
            $this->assertFalse(PhpProcess::canAcquire($place, $resource), 'another process is refused');
        }
        $lock->refresh();
        $lock->release();
        $this->assertFalse($lock->isAcquired());
        $this->assertFalse($lock->isLost());
        $other = $factory->createLock($resource);
        $this->assertTrue($other->acquire(false), 'free after release');
        $other->release();
    }

    public function testAForkedChildExitingDoesNotStopTheParentsRefresher(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, self::TTL, true, true);
        $this->assertTrue($lock->acquire());

        // The child leaves without releasing; its shutdown destroys its copies of the lock, factory and store.
        $child = $this->fork(function (Channel $parent) use ($lock): void {
            $this->assertFalse($lock->isAcquired(), 'inherited: not the child\'s');
        });
        $child->wait(10.0);

        // Another process tries for 3x TTL while this one only waits for it (PHP blocked in a read).
        $competitor = $this->spawn(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
            $tries = 0;
            $start = hrtime(true);
            while (hrtime(true) - $start < $vars['duration_ns']) {
                ++$tries;
                if ($lock->acquire(false)) {
                    echo 'acquired after ', $tries, ' tries';
                    exit(0);
                }
                usleep(100000);
            }
            echo 'refused ', $tries;
            PHP, ['dsn' => $dsn, 'resource' => $resource, 'duration_ns' => (int) (self::SLEEP_US * 1000)]);
        $competitor->closeStdin();
        $this->assertSame(0, $competitor->waitForExit(30.0), $competitor->stderr());
        $this->assertMatchesRegularExpression('/^refused \d+$/', $competitor->stdout(), 'the competitor never got the lock');

        $this->assertTrue($lock->isAcquired(), 'the parent still holds after 3x TTL');
        $this->assertFalse($lock->isLost());
        $lock->release();
        $this->assertSame(0, SharedRedis::client()->exists($resource));
    }

    public function testAChildThatInheritedTheLockDoesNotReviveItAfterTheParentReleased(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $factory = new LockFactory(new RedisStore($dsn));
        $lock = $factory->createLock($resource, self::TTL, true, true);
        $this->assertTrue($lock->acquire());

        $child = $this->fork(function (Channel $parent) use ($lock, $factory, $resource): void {
            // A lock of its own with autoRefresh starts a refresher in the child: it must not take on the inherited one.
            $own = $factory->createLock($resource.':child', self::TTL, true, true);
            $this->assertTrue($own->acquire());
            $parent->send('ready');
            $this->assertSame('released', $parent->receive());
            usleep(self::SLEEP_US);
            $this->assertFalse($lock->isAcquired(), 'the inherited lock is not the child\'s');
            $this->assertTrue($own->isAcquired(), 'the child\'s own lock is kept alive');
            $parent->send('slept');
            $this->assertSame('bye', $parent->receive());
            $own->release();
        });
        $this->assertSame('ready', $child->receive());
        $lock->release();
        $child->send('released');

        $redis = SharedRedis::client();
        $checks = 0;
        while (!$child->channel->hasPending()) {
            $this->assertSame(0, $redis->exists($resource), 'the released lock came back in Redis');
            ++$checks;
            usleep(100_000);
        }
        $this->assertGreaterThanOrEqual(5, $checks);
        $this->assertSame('slept', $child->receive());
        $this->assertSame(0, $redis->exists($resource), 'nothing revived it');
        $this->assertGreaterThan(0, $redis->pTtl($resource.':child'), 'the child\'s own lock is alive');
        $this->assertTrue(
            self::canAcquireElsewhere($dsn, $resource),
            'another process can acquire the lock the parent released'
        );
        $child->send('bye');
        $child->wait(10.0);
    }

    private static function canAcquireElsewhere(string $dsn, string $resource): bool
    {
        $result = PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
            echo $lock->acquire(false) ? 'acquired' : 'refused';
            PHP, ['dsn' => $dsn, 'resource' => $resource]);
        if (0 !== $result['exit'] || !\in_array($result['stdout'], ['acquired', 'refused'], true)) {
            throw new \PHPUnit\Framework\AssertionFailedError("The probe process failed.\n".$result['stdout'].$result['stderr']);
        }

        return 'acquired' === $result['stdout'];
    }

    private function redisPttl(string $key): int
    {
        $redis = SharedRedis::newPhpRedis();
        try {
            return (int) $redis->pttl($key);
        } finally {
            $redis->close();
        }
    }
}
