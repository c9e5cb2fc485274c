<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisClusterServers;

/**
 * RedisStore's own Redis Cluster connection, by DSN (`redis:?host[a]&host[b]&redis_cluster=1` and its other
 * spellings), against a real three-master cluster: scripts are routed by the resource's hash slot and the locks are
 * the same as through a lent \RedisCluster; a slot moved to another master (MOVED) or halfway through a migration
 * (ASK, TRYAGAIN) is followed by the Lock and store objects made before; a waiter of another process is handed the
 * lock; the auto-refresher keeps a cluster lock; names whose companion keys cannot share their slot, a database
 * other than 0 and deferred release are refused up front; a password stays out of messages and dumps.
 */
final class RedisClusterDsnTest extends DeadboltTestCase
{
    private static ?RedisClusterServers $cluster = null;

    public static function setUpBeforeClass(): void
    {
        self::$cluster = RedisClusterServers::start();
    }

    public static function tearDownAfterClass(): void
    {
        self::$cluster?->stop();
        self::$cluster = null;
    }

    public function testLocksOnManyResourcesLiveOnSeveralNodesAndBlockARival(): void
    {
        $c = self::cluster();
        $factory = new LockFactory(new RedisStore($c->dsn()));
        $rival = new LockFactory(new RedisStore($c->dsn()));
        $nodes = [];
        for ($i = 0; $i < 30; ++$i) {
            $name = "dsn-$i-".bin2hex(random_bytes(3));
            $lock = $factory->createLock($name, 30.0);
            $this->assertTrue($lock->acquire(), $name);
            $this->assertFalse($rival->createLock($name, 30.0)->acquire(false), "$name is held");
            $master = $c->masterOf($c->slotOf($name));
            $this->assertSame(1, $c->node($master)->exists($name), "$name lives on the master of its slot");
            $nodes[$master->port] = true;
            $lock->release();
            $this->assertSame(0, $c->node($master)->exists($name), "$name is gone after release");
            $this->assertTrue($rival->createLock($name, 30.0)->acquire(false), "$name is free after release");
        }
        $this->assertGreaterThanOrEqual(2, \count($nodes), 'the locks live on several nodes');
    }

    /** @return iterable<string, array{string}> */
    public static function spellings(): iterable
    {
        yield 'host[] and redis_cluster=1' => ['host[]'];
        yield 'authority, host[] and redis_cluster=true, timeouts' => ['authority'];
        yield 'several host[] without an option' => ['several hosts'];
        yield 'redis_cluster=on, db=0' => ['on, db=0'];
    }

    /**
     * @dataProvider spellings
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('spellings')]
    public function testEverySpellingSharesItsLocksWithALentRedisCluster(string $spelling): void
    {
        $seeds = self::cluster()->seeds();
        $native = new LockFactory(new RedisStore(match ($spelling) {
            'host[]' => self::cluster()->dsn(),
            'authority' => "redis://$seeds[0]?host[$seeds[1]]&redis_cluster=true&timeout=1&read_timeout=2",
            'several hosts' => 'redis:?host['.implode(']&host[', $seeds).']',
            'on, db=0' => self::cluster()->dsn(['redis_cluster' => 'on', 'db' => '0']),
        }));
        $lent = new LockFactory(new RedisStore(self::cluster()->client()));
        foreach (range(1, 5) as $i) {
            $name = "interop-$i-".bin2hex(random_bytes(3));
            $byDsn = $native->createLock($name, 30.0);
            $this->assertTrue($byDsn->acquire(), $name);
            $this->assertFalse($lent->createLock($name, 30.0)->acquire(false), "$name: the lent client sees the DSN's lock");
            $byDsn->release();

            $byClient = $lent->createLock($name, 30.0);
            $this->assertTrue($byClient->acquire(), "$name: free for the lent client after the DSN's release");
            $this->assertFalse($native->createLock($name, 30.0)->acquire(false), "$name: the DSN sees the lent client's lock");
            $byClient->release();
            $this->assertTrue($native->createLock($name, 30.0)->acquire(false), "$name: free again");
        }
    }

    /** @return iterable<string, array{'dsn'|'lent'}> */
    public static function connections(): iterable
    {
        yield 'DSN' => ['dsn'];
        yield 'lent \RedisCluster' => ['lent'];
    }

    /**
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testAHashTaggedResourceKeepsItsFencingQueueAndReadersInItsSlot(string $connection): void
    {
        $factory = new LockFactory($this->store($connection));
        $cart = 'cart:{'.bin2hex(random_bytes(4)).'}:items';
        $writer = $factory->createLock($cart, 30.0);
        $tokens = [];
        foreach (range(1, 3) as $hold) {
            $this->assertTrue($writer->acquire(), "hold $hold");
            $tokens[] = $writer->getFencingToken();
            $this->assertFalse($factory->createLock($cart, 30.0)->acquire(true, 0.2), "hold $hold: a queued writer runs out");
            $writer->release();
        }
        $this->assertContainsOnly('int', $tokens);
        $this->assertTrue($tokens[0] < $tokens[1] && $tokens[1] < $tokens[2], 'tokens increase: '.json_encode($tokens));

        $readers = [$factory->createLock($cart, 30.0), $factory->createLock($cart, 30.0)];
        foreach ($readers as $i => $reader) {
            $this->assertTrue($reader->acquireRead(), "reader $i shares");
        }
        $this->assertFalse($writer->acquire(), 'no writer while they read');
        foreach ($readers as $reader) {
            $reader->release();
        }
        $this->assertTrue($writer->acquire(), 'a writer once they left');
        $writer->release();
    }

    /**
     * A waiter of another process blocks in BLPOP on its grant list (through the DSN, or a \RedisCluster of its own);
     * the holder's release, connected the same way, makes it the holder and wakes it.
     *
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testAReleaseWakesAWaiterOfAnotherProcessWithTheLock(string $connection): void
    {
        $dsn = self::cluster()->dsn();
        $seeds = self::cluster()->seeds();
        $job = 'job-'.bin2hex(random_bytes(4));
        $holder = (new LockFactory($this->store($connection)))->createLock($job, 60.0);
        $this->assertTrue($holder->acquire());
        $waiter = $this->fork(static function (Channel $test) use ($connection, $dsn, $seeds, $job): void {
            Metrics::reset();
            $store = new RedisStore('dsn' === $connection ? $dsn : new \RedisCluster(null, $seeds, 5.0, 5.0));
            $mine = (new LockFactory($store))->createLock($job, 60.0);
            $got = $mine->acquire(true, 20.0);
            $test->send(json_encode([$got, Metrics::snapshot()['counters']['wakeups']]));
            $test->receive();
            $mine->release();
        });
        $this->assertTrue(self::cluster()->untilAClientBlocks(), 'the waiter is parked in BLPOP');
        $holder->release();

        [$got, $wakeups] = json_decode($waiter->receive(30.0));
        $this->assertTrue($got, 'the waiter has the lock');
        $this->assertSame(1, $wakeups, 'woken by the release, not by polling');
        $this->assertFalse($holder->acquire(), 'it holds it now');
        $waiter->send('done');
        $waiter->wait(10.0);
        $this->assertTrue($holder->acquire(), 'and released it');
        $holder->release();
    }

    /**
     * A brace without a hash tag, or an empty name, would put Deadbolt's companion keys in another slot than the
     * lock: refused before any node is asked, by every method, instead of a CROSSSLOT error halfway.
     *
     * @dataProvider connections
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('connections')]
    public function testNamesWhoseCompanionsCannotShareTheirSlotAreRefused(string $connection): void
    {
        $c = self::cluster();
        $store = $this->store($connection);
        $factory = new LockFactory($store);
        $tag = bin2hex(random_bytes(3));
        foreach (["a{b-$tag", "a}b-$tag", "a{}b-$tag", "}{-$tag", ''] as $name) {
            try {
                $factory->createLock($name, 30.0)->acquire();
                $this->fail("acquire() took \"$name\"");
            } catch (LockAcquiringException $e) {
                $this->assertInstanceOf(InvalidArgumentException::class, $e->getPrevious(), $name);
                $this->assertStringContainsString('Redis Cluster', $e->getPrevious()->getMessage(), $name);
            }
            $calls = [
                'save' => static fn (Key $key) => $store->save($key),
                'saveRead' => static fn (Key $key) => $store->saveRead($key),
                'exists' => static fn (Key $key) => $store->exists($key),
                'putOffExpiration' => static fn (Key $key) => $store->putOffExpiration($key, 30.0),
                'delete' => static fn (Key $key) => $store->delete($key),
            ];
            foreach ($calls as $method => $call) {
                // A Key with a token, as one held elsewhere has: a Key without one neither exists nor needs deleting.
                $key = new Key($name);
                (new InMemoryStore())->save($key);
                try {
                    $call($key);
                    $this->fail("$method() accepted \"$name\"");
                } catch (InvalidArgumentException $e) {
                    $this->assertStringContainsString('Redis Cluster', $e->getMessage(), "$method(\"$name\")");
                }
            }
        }
        $this->assertSame([], [...$c->keysMatching("*$tag*"), ...$c->keysMatching('#deadbolt:*')], 'nothing was written to any node');
        $this->assertSame(0, $c->node($c->masterOf($c->slotOf('')))->exists(''), 'nor the empty name');
        $tagged = $factory->createLock("{x}-a{b-$tag", 30.0);
        $this->assertTrue($tagged->acquire(), 'a brace after a hash tag is fine');
        $tagged->release();
    }

    public function testADatabaseOtherThanZeroAndDeferredReleaseAreRefused(): void
    {
        $c = self::cluster();
        $dsns = [
            'db=1' => $c->dsn(['db' => '1']),
            'path /1' => 'redis://'.$c->seeds()[0].'/1?host['.$c->seeds()[1].']&redis_cluster=1',
            'release=deferred' => $c->dsn(['release' => 'deferred']),
        ];
        foreach ($dsns as $what => $dsn) {
            try {
                new RedisStore($dsn);
                $this->fail("$what was accepted on a cluster");
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString('Redis Cluster', $e->getMessage(), $what);
            }
        }
    }

    /**
     * The slot of a held lock moves to another master, keys and all: the next call of each object gets MOVED and
     * follows it, with no new PHP object.
     */
    public function testASlotMovedToAnotherMasterIsFollowedByTheSameObjects(): void
    {
        $c = self::cluster();
        [$factory, $lock, $name, $slot, $from, $to] = $this->heldLockAndAnotherMaster('moved');
        $c->moveSlot($slot, $to);
        $moved = $c->errorCount($from, 'MOVED');

        $this->assertTrue($lock->isAcquired(), 'still held, on the new master');
        $lock->refresh(60.0);
        $this->assertGreaterThan(30_000, $c->node($to)->pttl($name), 'the refresh reached the new master');
        $this->assertFalse($factory->createLock($name, 30.0)->acquire(false), 'a rival is refused');
        $this->assertGreaterThan($moved, $c->errorCount($from, 'MOVED'), 'the old master said MOVED');
        $lock->release();
        foreach ([$from, $to] as $node) {
            $this->assertSame([], $c->node($node)->rawCommand('CLUSTER', 'GETKEYSINSLOT', (string) $slot, '10'), "nothing left on port {$node->port}");
        }
        $this->assertTrue($lock->acquire(), 'acquired again');
        $this->assertSame(1, $c->node($to)->exists($name), 'on the new master');
        $lock->release();

        // Back to where it was: this time the first call after the move is a wait (pipelined with its signal).
        $c->moveSlot($slot, $from);
        $this->assertTrue($lock->acquire(true, 5.0), 'a blocking acquire follows MOVED too');
        $this->assertSame(1, $c->node($from)->exists($name), 'on the master it was moved back to');
        $this->assertFalse($factory->createLock($name, 30.0)->acquire(true, 0.3), 'and a waiting rival runs out');
        $lock->release();
    }

    /**
     * Halfway through a migration the lock's key already sits on the target: single-key scripts (exists, refresh)
     * are answered ASK by the source and run on the target after ASKING. Scripts naming the companions too are
     * answered TRYAGAIN until the migration ends (Redis serves no multi-key request with missing keys in a slot being
     * migrated): a rival is not given the lock meanwhile, and a blocking acquire of a new resource in that slot waits
     * that out and gets its lock, on the target.
     */
    public function testASlotHalfwayThroughAMigrationIsFollowedWithAskAndTryAgainIsWaitedOut(): void
    {
        $c = self::cluster();
        [$factory, $held, $name, $slot, $from, $to] = $this->heldLockAndAnotherMaster('asked');
        $c->openMigration($slot, $to);
        $c->migrateKeys($slot, $from, $to);
        $asks = $c->errorCount($from, 'ASK');

        $this->assertTrue($held->isAcquired(), 'exists() is asked of the target');
        $held->refresh(60.0);
        $this->assertGreaterThanOrEqual($asks + 2, $c->errorCount($from, 'ASK'), 'both went to the target after an ASK');
        $target = $c->node($to);
        $target->rawCommand('ASKING');
        $this->assertGreaterThan(30_000, $target->pttl($name), 'the refresh reached the target');
        try {
            $rivalGotIt = $factory->createLock($name, 30.0)->acquire(false);
        } catch (LockAcquiringException) {
            $rivalGotIt = false;
        }
        $this->assertFalse($rivalGotIt, 'a rival does not get a held lock during the migration');

        $fresh = $c->nameInSlot($slot, 'fresh-'.bin2hex(random_bytes(2)));
        $tryAgains = $c->errorCount($to, 'TRYAGAIN');
        $finisher = $this->fork(static function () use ($c, $slot, $from, $to, $tryAgains): void {
            // The migration ends once the acquire below kept meeting TRYAGAIN (ten times: more than a retry or two
            // inside one call), or after 10 s anyway.
            for ($deadline = microtime(true) + 10; $c->errorCount($to, 'TRYAGAIN') < $tryAgains + 10 && microtime(true) < $deadline;) {
                usleep(5000);
            }
            $c->finishMigration($slot, $from, $to, settle: false);
        });
        $lock = $factory->createLock($fresh, 30.0);
        $this->assertTrue($lock->acquire(true, 20.0), 'a new resource in the migrating slot, granted once the migration ended');
        $finisher->wait(30.0);
        $this->assertGreaterThan($tryAgains, $c->errorCount($to, 'TRYAGAIN'), 'the acquire met TRYAGAIN on the target');
        $this->assertSame(1, $c->node($to)->exists($fresh), 'the new lock lives on the target');
        $lock->release();
        $held->release();
        $this->assertSame(0, $c->node($to)->exists($name, $fresh), 'both released');
    }

    public function testTheRefresherKeepsAClusterLockPastItsTtl(): void
    {
        $c = self::cluster();
        $name = 'refreshed-'.bin2hex(random_bytes(4));
        $lock = (new LockFactory(new RedisStore($c->dsn())))->createLock($name, 1.0, true, true);
        $rival = (new LockFactory(new RedisStore($c->client())))->createLock($name, 30.0);
        $this->assertTrue($lock->acquire());
        // Three TTLs: only the extension's thread can keep the lock meanwhile.
        for ($end = microtime(true) + 3.0; microtime(true) < $end;) {
            $this->assertFalse($rival->acquire(false), 'the rival got an auto-refreshed lock');
            usleep(200_000);
        }
        $this->assertTrue($lock->isAcquired());
        $this->assertFalse($lock->isLost());
        $lock->release();
        $this->assertTrue($rival->acquire(false), 'free once released');
        $rival->release();
    }

    public function testAPasswordFromTheEnvironmentWorksAndAWrongOneStaysOutOfMessagesAndDumps(): void
    {
        $secret = 'cluster-secret-'.bin2hex(random_bytes(4));
        $wrong = 'wrong-secret-'.bin2hex(random_bytes(4));
        $protected = RedisClusterServers::start(3, 0, ['requirepass' => $secret]);
        putenv("DEADBOLT_TEST_CLUSTER_PW=$secret");
        putenv("DEADBOLT_TEST_CLUSTER_WRONG_PW=$wrong");
        try {
            $lock = (new LockFactory(new RedisStore($protected->dsn(['password_env' => 'DEADBOLT_TEST_CLUSTER_PW']))))->createLock('authenticated', 30.0);
            $this->assertTrue($lock->acquire());
            $this->assertSame(1, $protected->node($protected->masterOf($protected->slotOf('authenticated')))->exists('authenticated'));
            $lock->release();

            $store = new RedisStore($protected->dsn(['password_env' => 'DEADBOLT_TEST_CLUSTER_WRONG_PW', 'timeout' => '1']));
            try {
                (new LockFactory($store))->createLock('refused', 30.0)->acquire();
                $this->fail('acquired with a wrong password');
            } catch (LockAcquiringException $e) {
                $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
                ob_start();
                var_dump($store);
                $text = $e->getMessage().$e->getPrevious()->getMessage().$e->getTraceAsString().ob_get_clean().print_r($store, true);
                $this->assertStringNotContainsString($secret, $text);
                $this->assertStringNotContainsString($wrong, $text);
            }
        } finally {
            putenv('DEADBOLT_TEST_CLUSTER_PW');
            putenv('DEADBOLT_TEST_CLUSTER_WRONG_PW');
            $protected->stop();
        }
    }

    /** @param 'dsn'|'lent' $connection */
    /**
     * A lock held through the DSN on a new name, its slot, the master serving it and another master to move it to.
     *
     * @return array{LockFactory, \Deadbolt\Lock, string, int, \Deadbolt\Tests\Support\RedisServer, \Deadbolt\Tests\Support\RedisServer}
     */
    private function heldLockAndAnotherMaster(string $prefix): array
    {
        $c = self::cluster();
        $factory = new LockFactory(new RedisStore($c->dsn()));
        $name = $prefix.'-'.bin2hex(random_bytes(4));
        $lock = $factory->createLock($name, 30.0);
        $this->assertTrue($lock->acquire());
        $slot = $c->slotOf($name);
        $from = $c->masterOf($slot);

        return [$factory, $lock, $name, $slot, $from, $c->otherMaster($from)];
    }

    private function store(string $connection): RedisStore
    {
        return new RedisStore('dsn' === $connection ? self::cluster()->dsn() : self::cluster()->client());
    }

    private static function cluster(): RedisClusterServers
    {
        return self::$cluster ?? throw new \LogicException('the cluster is not running');
    }
}
