<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisClusterServers;
use Deadbolt\Tests\Support\RedisServer;

/**
 * A cluster node failover: three masters with one replica each, cluster-node-timeout 1 s, reached through the
 * cluster DSN. In each round worker A ({@see FailoverWorker}, a php process) takes a lock and holds it; the test
 * takes away the master serving the lock's slot, waits until the nodes agree its replica was promoted and the old
 * master is back as that one's replica; then worker B asks for the lock, and both write to a {@see FencedResource}
 * (B first: A's write is the late write of a holder who may have lost its lock). Counted from what the workers and
 * the resource answered: two holders at once, one token for both, stale writes the fenced resource accepted, stale
 * writes a resource without fencing would have taken.
 *
 * Faults: "kill" (SIGKILL, then restarted), "pause" (SIGSTOP until the failover, then SIGCONT), "cut" (the replica
 * frozen and cut off first, so the lock reaches the master only: what asynchronous replication loses). Each with
 * plain locks and with `replicas=1`. Proved: with replicas=1 no acknowledged lock is lost, in no mode does the fenced
 * resource take a late write, and A's objects made before the failover release on the promoted master. Two more
 * tests follow one Lock object through a failover, and a blocking acquire through the time no node serves the slot.
 *
 * DEADBOLT_SOAK=1: 10 rounds of each fault and mode instead of 1. DEADBOLT_REPORT=<file>: the summary goes there too.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class ClusterFailoverTest extends DeadboltTestCase
{
    private const FAULTS = ['kill', 'pause', 'cut'];
    private const MODES = ['plain' => [], 'replicas=1' => ['replicas' => '1', 'replicas_timeout' => '0.5']];

    private static ?RedisClusterServers $cluster = null;

    /** @var list<float> seconds from each fault to the promotion the nodes agreed on */
    private array $failoverSeconds = [];

    public static function setUpBeforeClass(): void
    {
        self::$cluster = RedisClusterServers::start(3, 1, ['cluster-node-timeout' => '1000']);
    }

    /** A test that failed halfway leaves no node paused or dead for the next one. */
    protected function tearDown(): void
    {
        self::$cluster?->revive();
    }

    public static function tearDownAfterClass(): void
    {
        self::$cluster?->stop();
        self::$cluster = null;
    }

    public function testAcknowledgedLocksSurviveAFailoverAndTheFencedResourceTakesNoLateWrite(): void
    {
        $rounds = '1' === getenv('DEADBOLT_SOAK') ? 10 : 1;
        $tally = [];
        foreach (self::MODES as $mode => $options) {
            $a = $this->worker(self::cluster()->dsn($options), 1);
            $b = $this->worker(self::cluster()->dsn($options), 2);
            foreach (self::FAULTS as $fault) {
                for ($round = 0; $round < $rounds; ++$round) {
                    $label = "cluster-$mode-$fault-$round-".bin2hex(random_bytes(2));
                    foreach ($this->round($a, $b, $fault, $label) as $what => $count) {
                        $tally[$mode][$fault][$what] = ($tally[$mode][$fault][$what] ?? 0) + $count;
                    }
                }
            }
            foreach ([$a, $b] as $worker) {
                $worker->writeLine('quit');
                $this->assertSame(0, $worker->waitForExit(30.0), $worker->stderr());
                $this->assertSame('', $worker->stderr());
            }
        }

        $summary = $this->summary($tally, $rounds);
        $report = getenv('DEADBOLT_REPORT');
        if (\is_string($report) && '' !== $report) {
            file_put_contents($report, $summary, \FILE_APPEND);
        }
        foreach (self::FAULTS as $fault) {
            $this->assertSame($rounds, $tally['replicas=1'][$fault]['failovers'], $summary);
            $this->assertSame(0, $tally['replicas=1'][$fault]['two holders'], "an acknowledged lock was lost in a failover\n$summary");
            foreach (array_keys(self::MODES) as $mode) {
                $this->assertSame(0, $tally[$mode][$fault]['stale accepted (fenced)'], "the fenced resource took a late write\n$summary");
            }
        }
        foreach (['kill', 'pause'] as $fault) {
            $this->assertSame($rounds, $tally['replicas=1'][$fault]['B refused'], "B got a lock A held, acknowledged\n$summary");
        }
        $this->assertSame($rounds, $tally['replicas=1']['cut']['A refused'], "a lock no replica had was not refused\n$summary");
        // The checker sees what it is there to see: a lock written to the master alone is lost when it dies.
        $this->assertGreaterThan(0, $tally['plain']['cut']['two holders'], $summary);
    }

    /**
     * One Lock object, acknowledged by the replica, across the death of its master: the same object finds its lock
     * on the promoted replica, refreshes it and releases it there, and takes it again.
     */
    public function testALockObjectFollowsItsSlotToThePromotedReplica(): void
    {
        $c = self::cluster();
        $c->waitUntilSettled();
        $factory = new LockFactory(new RedisStore($c->dsn(['replicas' => '1', 'replicas_timeout' => '5'])));
        $name = 'followed-'.bin2hex(random_bytes(4));
        $lock = $factory->createLock($name, 30.0);
        $this->assertTrue($lock->acquire());
        $slot = $c->slotOf($name);
        $old = $c->masterOf($slot);
        $old->stop();
        $new = $this->failover($old, $slot);
        $old->restart();
        $c->waitUntilSettled();

        $this->assertTrue($lock->isAcquired(), 'the acknowledged lock is on the promoted replica');
        $lock->refresh(60.0);
        $this->assertGreaterThan(30_000, $c->node($new)->pttl($name), 'the refresh reached the new master');
        $this->assertFalse($factory->createLock($name, 30.0)->acquire(false), 'it still excludes others');
        $lock->release();
        $this->assertSame(0, $c->node($new)->exists($name), 'the release reached the new master');
        $this->assertTrue($lock->acquire(), 'and it is taken again');
        $this->assertSame(1, $c->node($new)->exists($name));
        $lock->release();
    }

    /**
     * While no node serves a slot (its master died, its replica is not promoted yet) a call fails with a storage
     * error, and a blocking acquire with a deadline keeps trying and gets the lock on the promoted replica.
     */
    public function testABlockingAcquireOutlastsTheTimeNoNodeServesTheSlot(): void
    {
        $c = self::cluster();
        $c->waitUntilSettled();
        $factory = new LockFactory(new RedisStore($c->dsn()));
        $name = 'outlasting-'.bin2hex(random_bytes(4));
        $lock = $factory->createLock($name, 30.0);
        $this->assertTrue($lock->acquire(), 'the store knows the slot map');
        $lock->release();
        $slot = $c->slotOf($name);
        $old = $c->masterOf($slot);
        $old->stop();
        try {
            $factory->createLock($name, 30.0)->acquire(false);
            $this->fail('acquired on a dead master');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
        }
        $this->assertTrue($lock->acquire(true, 30.0), 'granted once the replica was promoted');
        $new = $this->failover($old, $slot);
        $this->assertSame(1, $c->node($new)->exists($name), 'on the promoted replica');
        $lock->release();
    }

    /**
     * @return array<string, int>
     */
    private function round(PhpProcess $a, PhpProcess $b, string $fault, string $resource): array
    {
        $c = self::cluster();
        $c->waitUntilSettled();
        $slot = $c->slotOf($resource);
        $master = $c->masterOf($slot);
        $replica = $c->replicasOf($master)[0] ?? throw new \RuntimeException("master {$master->port} has no replica");
        $dir = $this->tempDir();
        if ('cut' === $fault) {
            $replica->pause();
            $c->node($master)->rawCommand('CLIENT', 'KILL', 'TYPE', 'slave');
        }
        $a->writeLine("acquire $resource 5");
        $aSaid = $a->readLine(30.0);
        $this->assertMatchesRegularExpression('/^(acquired \d+|refused Deadbolt\\\\Exception\\\\\w+: .*only 0 of the 1 replicas)/', $aSaid, $resource);
        'pause' === $fault ? $master->pause() : $master->stop();
        if ('cut' === $fault) {
            $replica->resume();
        }
        $this->failover($master, $slot);
        'pause' === $fault ? $master->resume() : $master->restart();
        // The old master is the new one's replica again: a replicas=1 write can be acknowledged, and the next round
        // can fail over.
        $c->waitUntilSettled();

        $b->writeLine("acquire $resource 1");
        $bSaid = $b->readLine(30.0);
        $this->assertMatchesRegularExpression('/^(acquired \d+|timeout)$/', $bSaid, $resource);
        $holders = array_filter(['B' => [$b, $bSaid], 'A' => [$a, $aSaid]], static fn (array $w): bool => str_starts_with($w[1], 'acquired '));
        $writes = [];
        foreach ($holders as $who => [$worker]) {
            $worker->writeLine("write $dir");
            $writes[$who] = $worker->readLine(30.0);
        }
        foreach (['A' => $a, 'B' => $b] as $who => $worker) {
            $worker->writeLine('release');
            $this->assertSame('released', $worker->readLine(30.0), "$resource: $who's objects made before the failover release after it");
        }
        $both = 2 === \count($holders);

        return [
            'failovers' => 1,
            'A refused' => (int) !isset($holders['A']),
            'B refused' => (int) !isset($holders['B']),
            'two holders' => (int) $both,
            'same token' => (int) ($both && $aSaid === $bSaid),
            'stale accepted (fenced)' => (int) ($both && 'accepted' === $writes['A']),
            'stale accepted (unfenced)' => (int) $both,
        ];
    }

    /** Waits for the promotion that takes $slot away from $old; returns the new master. */
    private function failover(RedisServer $old, int $slot): RedisServer
    {
        $start = hrtime(true);
        $new = self::cluster()->waitForFailoverFrom($old, $slot);
        $this->failoverSeconds[] = (hrtime(true) - $start) / 1e9;

        return $new;
    }

    /**
     * @param array<string, array<string, array<string, int>>> $tally mode => fault => count name => count
     */
    private function summary(array $tally, int $rounds): string
    {
        $text = "Deadbolt cluster failover run: $rounds round(s) per fault and mode, lock TTL ".FailoverWorker::TTL." s\n";
        foreach ($tally as $mode => $faults) {
            foreach ($faults as $fault => $counts) {
                $text .= '  '.str_pad("$mode, $fault:", 20).json_encode($counts)."\n";
            }
        }
        sort($this->failoverSeconds);

        return $text.sprintf("  promotion after a fault: %.1f s to %.1f s\n", $this->failoverSeconds[0], end($this->failoverSeconds));
    }

    private function worker(string $dsn, int $id): PhpProcess
    {
        // A fresh php has no autoloader: the worker's two classes by path.
        $code = 'foreach (["FencedResource", "FailoverWorker"] as $class) { require $vars["chaos"]."/$class.php"; } '
            .FailoverWorker::class.'::run($vars);';
        $worker = $this->spawn($code, ['chaos' => __DIR__, 'dsn' => $dsn, 'worker' => $id]);
        $this->assertSame('ready', $worker->readLine(30.0));

        return $worker;
    }

    private static function cluster(): RedisClusterServers
    {
        return self::$cluster ?? throw new \LogicException('the cluster is not running');
    }
}
