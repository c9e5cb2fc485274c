<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\SentinelGroup;

/**
 * Failover chaos: a primary with two replicas and three sentinels. In each round worker A takes a lock (through the
 * Sentinel DSN) and holds it; the test takes the primary away mid-hold so that a replica is promoted; then worker B
 * asks for the same lock on the new primary, and both write to a fenced resource (B first, then A: A's write is the
 * late write of a holder who may have lost its lock). Counted from what the workers and the resource answered: two
 * holders at once, two holds with one fencing token, stale writes the fenced resource accepted, stale writes a
 * resource without fencing would have taken.
 *
 * Faults: "kill" (SIGKILL of the primary, replication healthy), "cut" (the replicas frozen and cut off first, so the
 * lock reaches the primary only: what asynchronous replication loses), "pause" (SIGSTOP of the primary until the
 * failover, then it comes back and is turned into a replica). Each with plain locks and with `replicas=1`.
 *
 * DEADBOLT_SOAK=1: 15 rounds of each instead of 2. DEADBOLT_REPORT=<file>: the summary is written there too.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class FailoverTest extends DeadboltTestCase
{
    private const KINDS = ['kill', 'cut', 'pause'];
    private const MODES = ['plain' => '', 'replicas=1' => 'replicas=1&replicas_timeout=0.5'];
    /** @var list<float> seconds each round waited for the sentinels to settle */
    private array $settled = [];

    private const COUNTS = ['failovers', 'A refused', 'B refused', 'two holders', 'same token', 'stale accepted (fenced)', 'stale accepted (unfenced)'];

    public function testAcknowledgedLocksSurviveFailoversAndFencingRejectsTheLateWrites(): void
    {
        $rounds = '1' === getenv('DEADBOLT_SOAK') ? 15 : 2;
        $group = SentinelGroup::start(2);
        $counts = [];
        try {
            foreach (self::MODES as $mode => $options) {
                $a = $this->worker($group->dsn($options), 1);
                $b = $this->worker($group->dsn($options), 2);
                foreach (self::KINDS as $kind) {
                    $counts[$mode][$kind] = array_fill_keys(self::COUNTS, 0);
                    for ($round = 0; $round < $rounds; ++$round) {
                        foreach ($this->round($group, $a, $b, $kind, "$mode-$kind-$round") as $name => $count) {
                            $counts[$mode][$kind][$name] += $count;
                        }
                    }
                }
                foreach ([$a, $b] as $worker) {
                    $worker->writeLine('quit');
                    $this->assertSame(0, $worker->waitForExit(30.0), $worker->stderr());
                    $this->assertSame('', $worker->stderr());
                }
            }
        } finally {
            $group->stop();
        }

        $summary = "Deadbolt failover run: $rounds rounds per fault and mode, lock TTL ".FailoverWorker::TTL." s\n";
        foreach ($counts as $mode => $kinds) {
            foreach ($kinds as $kind => $c) {
                $summary .= sprintf("  %-10s %-5s %s\n", $mode, $kind, implode(', ', array_map(fn ($n, $v) => "$n $v", array_keys($c), $c)));
            }
        }
        $summary .= sprintf("  waited for the sentinels to settle before a round: median %.1f s, max %.1f s\n", $this->median($this->settled), max($this->settled));
        $report = getenv('DEADBOLT_REPORT');
        if (false !== $report && '' !== $report) {
            file_put_contents($report, $summary, FILE_APPEND);
        }
        foreach (self::KINDS as $kind) {
            $this->assertSame($rounds, $counts['replicas=1'][$kind]['failovers'], $summary);
            $this->assertSame(0, $counts['replicas=1'][$kind]['two holders'], "an acknowledged lock was lost in a failover\n$summary");
            foreach (self::MODES as $mode => $options) {
                $this->assertSame(0, $counts[$mode][$kind]['stale accepted (fenced)'], "the fenced resource took a late write\n$summary");
            }
        }
        $this->assertSame($rounds, $counts['replicas=1']['cut']['A refused'], "a lock no replica had was not refused\n$summary");
        // The checker sees what it is there to see: a lock written to the primary alone is lost when it dies.
        $this->assertGreaterThan(0, $counts['plain']['cut']['two holders'], $summary);
    }

    /**
     * @return array<string, int>
     */
    private function round(SentinelGroup $group, PhpProcess $a, PhpProcess $b, string $kind, string $label): array
    {
        // Every round starts from a group the sentinels have settled (after the last round's failover, or a second
        // one they made on their own) so that the next failover can happen.
        $settling = hrtime(true);
        $primary = $group->waitUntilSettled();
        $this->settled[] = (hrtime(true) - $settling) / 1e9;
        $replicas = array_values(array_filter($group->servers, fn (RedisServer $s) => $s !== $primary));
        $dir = $this->tempDir();
        if ('cut' === $kind) {
            foreach ($replicas as $replica) {
                $replica->pause();
            }
            $primary->client()->rawCommand('CLIENT', 'KILL', 'TYPE', 'slave');
        }
        $a->writeLine("acquire $label 5");
        $aGot = $a->readLine(30.0);
        $this->assertMatchesRegularExpression('/^(acquired \d+|refused Deadbolt\\\\Exception\\\\\w+: .*only 0 of the 1 replicas)/', $aGot, $label);
        if ('pause' === $kind) {
            $primary->pause();
        } else {
            $primary->stop();
        }
        if ('cut' === $kind) {
            foreach ($replicas as $replica) {
                $replica->resume();
            }
        }
        $new = $group->waitForFailoverFrom($primary);
        if ('pause' === $kind) {
            $primary->resume();
        } else {
            $primary->restart();
        }
        $group->pointReplicasAt($new);

        $b->writeLine("acquire $label 3");
        $bGot = $b->readLine(30.0);
        $aHolds = str_starts_with($aGot, 'acquired ');
        $bHolds = str_starts_with($bGot, 'acquired ');
        // B may also be refused while the new primary has no replica back yet (replicas=1): no second holder then.
        $this->assertMatchesRegularExpression('/^(acquired \d+|timeout|refused .*replicas)/', $bGot, $label);
        $writes = ['A' => null, 'B' => null];
        foreach (['B' => [$b, $bHolds], 'A' => [$a, $aHolds]] as $who => [$worker, $holds]) {
            if ($holds) {
                $worker->writeLine("write $dir");
                $writes[$who] = $worker->readLine(30.0);
            }
        }
        foreach ([$a, $b] as $worker) {
            $worker->writeLine('release');
            $this->assertMatchesRegularExpression('/^(released|release-failed .*)$/', $worker->readLine(30.0), $label);
        }
        $stale = $aHolds && $bHolds;

        return [
            'failovers' => 1,
            'A refused' => $aHolds ? 0 : 1,
            'B refused' => str_starts_with($bGot, 'refused') ? 1 : 0,
            'two holders' => $stale ? 1 : 0,
            'same token' => $stale && substr($aGot, 9) === substr($bGot, 9) ? 1 : 0,
            'stale accepted (fenced)' => $stale && 'accepted' === $writes['A'] ? 1 : 0,
            'stale accepted (unfenced)' => $stale ? 1 : 0,
        ];
    }

    /**
     * @param list<float> $values
     */
    private function median(array $values): float
    {
        sort($values);

        return $values[intdiv(\count($values), 2)];
    }

    private function worker(string $dsn, int $id): PhpProcess
    {
        $process = $this->spawn(
            'require $vars["chaos"]."/FencedResource.php"; require $vars["chaos"]."/FailoverWorker.php"; '
            .'Deadbolt\Tests\Chaos\FailoverWorker::run($vars);',
            ['chaos' => __DIR__, 'dsn' => $dsn, 'worker' => $id]
        );
        $this->assertSame('ready', $process->readLine(30.0));

        return $process;
    }
}
