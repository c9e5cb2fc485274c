<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\LockFactory;
use Deadbolt\Metrics;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * `Deadbolt\Metrics`: per-process counters and histograms, counted exactly by the rules of API-CONTRACT.md. Exact
 * scenarios run in a fresh php process (nothing counted before them); the fork rule runs in a pcntl_fork() child.
 * The lost counter is checked by RefresherTest (Redis stopped under an auto-refreshed lock).
 */
final class MetricsTest extends FeatureTestCase
{
    private const ZERO_COUNTERS = [
        'acquired' => 0,
        'conflicts' => 0,
        'timeouts' => 0,
        'lost' => 0,
        'refresh_ok' => 0,
        'refresh_failed' => 0,
        'store_errors' => 0,
        'wakeups' => 0,
        'polls' => 0,
        'released' => 0,
        'unacknowledged' => 0,
        'force_released' => 0,
    ];

    public function testAnExactFlockScenarioIsCountedExactly(): void
    {
        $result = PhpProcess::run(<<<'PHP'
            $fresh = Deadbolt\Metrics::snapshot();
            Deadbolt\Metrics::reset();
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
            $a = $factory->createLock('metrics', 30.0);
            $b = $factory->createLock('metrics', 30.0);
            $c = $factory->createLock('other', 30.0);
            $steps = [
                $a->acquire(),              // acquired 1
                $b->acquire(),              // conflict 1
                $b->acquire(false),         // conflict 2
                $b->acquire(false, 0.05),   // timeout 1 (a wait with a deadline)
            ];
            $a->refresh();                  // refresh_ok 1
            $a->release();                  // released 1
            $steps[] = $b->acquire();       // acquired 2
            $b->release();                  // released 2
            $steps[] = $c->acquire();       // acquired 3, still held at the snapshot
            $after = Deadbolt\Metrics::snapshot();
            $prometheus = Deadbolt\Metrics::prometheus();
            Deadbolt\Metrics::reset();
            $reset = Deadbolt\Metrics::snapshot();
            echo base64_encode(serialize(compact('fresh', 'steps', 'after', 'prometheus', 'reset')));
            PHP, ['dir' => $this->tempDir()]);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame('', $result['stderr']);
        ['fresh' => $fresh, 'steps' => $steps, 'after' => $after, 'prometheus' => $prometheus, 'reset' => $reset]
            = unserialize(base64_decode($result['stdout']));

        $this->assertSame([true, false, false, false, true, true], $steps, 'the scenario went as planned');
        $this->assertZero($fresh, 'a fresh process');
        $this->assertZero($reset, 'after reset()');

        // A flock wait with a deadline retries on a 1-25 ms backoff: how many retries fit in its 50 ms depends on the
        // scheduler, so polls is checked apart (at least one), every other counter exactly.
        $counters = $after['counters'];
        $this->assertGreaterThanOrEqual(1, $counters['polls'], 'the timed flock wait retried');
        $counters['polls'] = 0;
        $this->assertSame([
            'acquired' => 3,
            'conflicts' => 2,
            'timeouts' => 1,
            'lost' => 0,
            'refresh_ok' => 1,
            'refresh_failed' => 0,
            'store_errors' => 0,
            'wakeups' => 0,
            'polls' => 0,
            'released' => 2,
            'unacknowledged' => 0,
            'force_released' => 0,
        ], $counters);
        $this->assertSame(['counters', 'timings'], array_keys($after));
        $this->assertSame(['wait_seconds', 'hold_seconds'], array_keys($after['timings']));
        $wait = $after['timings']['wait_seconds'];
        $hold = $after['timings']['hold_seconds'];
        self::assertWellFormedHistogram($wait, 'wait_seconds');
        self::assertWellFormedHistogram($hold, 'hold_seconds');
        $this->assertSame(6, $wait['count'], 'one wait observation per acquire call');
        $this->assertSame(2, $hold['count'], 'one hold observation per release');
        // The wait that timed out lasted at least its 0.05 s: not in the buckets below that.
        $this->assertGreaterThanOrEqual(0.05, $wait['sum']);
        $this->assertLessThanOrEqual(5, $wait['buckets']['0.025'], 'the timed-out wait is above 25 ms');
        $this->assertLessThanOrEqual(5, $wait['buckets']['0.05'], 'the timed-out wait is above 50 ms');
        $this->assertSame($wait['buckets']['1'], $wait['buckets'][1], 'integer-looking bounds are ordinary keys');

        $lines = explode("\n", $prometheus);
        foreach ([
            'deadbolt_acquired_total 3',
            'deadbolt_conflicts_total 2',
            'deadbolt_timeouts_total 1',
            'deadbolt_refresh_ok_total 1',
            'deadbolt_released_total 2',
            'deadbolt_lost_total 0',
            'deadbolt_wait_seconds_bucket{le="+Inf"} 6',
            'deadbolt_wait_seconds_count 6',
            'deadbolt_hold_seconds_bucket{le="+Inf"} 2',
            'deadbolt_hold_seconds_count 2',
            '# TYPE deadbolt_acquired_total counter',
            '# TYPE deadbolt_wait_seconds histogram',
            '# TYPE deadbolt_hold_seconds histogram',
        ] as $expected) {
            $this->assertContains($expected, $lines, "prometheus() has the line: $expected\n$prometheus");
        }
        $this->assertContains(sprintf('deadbolt_wait_seconds_bucket{le="0.025"} %d', $wait['buckets']['0.025']), $lines);
        $this->assertMatchesRegularExpression('/^deadbolt_wait_seconds_sum \d+(\.\d+)?(e-?\d+)?$/m', $prometheus);
    }

    public function testAForkedChildStartsFromZeroWhileTheParentKeepsItsNumbers(): void
    {
        Metrics::reset();
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 30.0);
        $this->assertTrue($lock->acquire());
        $this->assertFalse($factory->createLock($resource, 30.0)->acquire(), 'a conflict');
        $lock->release();
        $this->assertTrue($lock->acquire());
        $before = Metrics::snapshot();
        $this->assertSame(['acquired' => 2, 'conflicts' => 1, 'released' => 1], array_intersect_key($before['counters'], ['acquired' => 0, 'conflicts' => 0, 'released' => 0]));

        $child = $this->fork(function (Channel $parent) use ($factory, $lock): void {
            $this->assertZero(Metrics::snapshot(), 'a forked child');
            $this->assertFalse($lock->isAcquired(), 'inherited, not the child\'s');
            $own = $factory->createLock(uniqid('child', true), 30.0);
            $this->assertTrue($own->acquire());
            $own->release();
            $parent->send(serialize(Metrics::snapshot()['counters']));
        });
        $childCounters = unserialize($child->receive());
        $child->wait(10.0);

        $this->assertSame(array_merge(self::ZERO_COUNTERS, ['acquired' => 1, 'released' => 1]), $childCounters, 'the child counts its own work only');
        $this->assertEquals($before, Metrics::snapshot(), 'the parent keeps its numbers');
        $lock->release();
        $this->assertSame(2, Metrics::snapshot()['counters']['released']);
    }

    public function testPhpinfoShowsTheCounters(): void
    {
        $result = PhpProcess::run(<<<'PHP'
            Deadbolt\Metrics::reset();
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\InMemoryStore());
            $a = $factory->createLock('info', 30.0);
            $a->acquire();
            $factory->createLock('info', 30.0)->acquire();
            $a->release();
            ob_start();
            phpinfo(INFO_MODULES);
            echo base64_encode(serialize(['info' => ob_get_clean(), 'counters' => Deadbolt\Metrics::snapshot()['counters']]));
            PHP);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        ['info' => $info, 'counters' => $counters] = unserialize(base64_decode($result['stdout']));
        $this->assertSame(array_merge(self::ZERO_COUNTERS, ['acquired' => 1, 'conflicts' => 1, 'released' => 1]), $counters);

        // CLI phpinfo() is text: a module section starts with its name on a line of its own, up to the next one.
        $this->assertSame(1, preg_match('/^deadbolt\n\n(.*?)\n\n/ms', $info, $section), "a deadbolt section in:\n$info");
        $rows = [];
        foreach (explode("\n", $section[1]) as $row) {
            $cells = explode(' => ', $row);
            $rows[$cells[0]] = $cells[1] ?? null;
        }
        foreach ($counters as $name => $value) {
            $this->assertArrayHasKey($name, $rows, "phpinfo() shows $name:\n".$section[1]);
            $this->assertSame((string) $value, $rows[$name], "phpinfo() value of $name");
        }
    }

    /**
     * @param array{counters: array<string, int>, timings: array<string, array{count: int, sum: float, buckets: array<int|string, int>}>} $snapshot
     */
    private function assertZero(array $snapshot, string $when): void
    {
        $this->assertSame(self::ZERO_COUNTERS, $snapshot['counters'], "$when: counters");
        foreach (['wait_seconds', 'hold_seconds'] as $name) {
            $histogram = $snapshot['timings'][$name];
            $this->assertSame(0, $histogram['count'], "$when: $name count");
            $this->assertSame(0.0, $histogram['sum'], "$when: $name sum");
            $this->assertSame([0], array_values(array_unique($histogram['buckets'])), "$when: $name buckets");
            self::assertWellFormedHistogram($histogram, "$when: $name");
        }
    }
}
