<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;

/**
 * Chaos: M worker processes contend for one Redis lock (TTL 0.5 s, acquire(true, 2), half of them with autoRefresh),
 * each hold writes its fencing token to a strict fenced resource (flock-protected files, out of the chaos' reach),
 * while the test restarts Redis, kills its clients, freezes and kills workers and slows the network down. The verdict
 * comes from the files only (HistoryChecker): never from how long anything took.
 *
 * Redis runs with appendonly + appendfsync always: a restart keeps the dataset (lock keys and the never-expiring
 * fencing counter). A restart that LOSES the dataset resets the fencing counter and drops held locks: no Redis lock
 * can be safe through that, so it is not part of the scenario.
 *
 * DEADBOLT_SOAK=1: ~3 minutes instead of ~10 s. DEADBOLT_REPORT=<file>: the summary is written there too.
 *
 * Slow: make check leaves it out, make test runs it.
 *
 * @group slow
 */
#[\PHPUnit\Framework\Attributes\Group('slow')]
final class ChaosTest extends DeadboltTestCase
{
    private const WORKERS = 6;
    private const KINDS = ['redis-restart', 'client-kill', 'sigstop', 'sigkill', 'latency'];

    public function testFencedWritesStayOrderedAndExclusiveUnderChaos(): void
    {
        $soak = '1' === getenv('DEADBOLT_SOAK');
        $duration = $soak ? 180.0 : 10.0;
        $dir = $this->tempDir();
        $stop = $dir.'/stop';
        $resource = 'chaos-'.bin2hex(random_bytes(6));

        $server = RedisServer::start(['appendonly' => 'yes', 'appendfsync' => 'always']);
        $control = $server->client();
        $this->assertSame('yes', $control->config('GET', 'appendonly')['appendonly'] ?? null, 'the dataset must survive a restart');
        $control->close();

        $proxy = $this->spawn(
            'require $vars["file"]; Deadbolt\Tests\Chaos\LatencyProxy::serve($vars["port"]);',
            ['file' => __DIR__.'/LatencyProxy.php', 'port' => $server->port]
        );
        $this->assertMatchesRegularExpression('/^listening \d+$/', $line = $proxy->readLine(10.0));
        $dsn = 'redis://127.0.0.1:'.(int) substr($line, 10);

        /** @var array<int, array{process: PhpProcess, pid: int, autoRefresh: bool}> $workers */
        $workers = [];
        $nextId = 0;
        $startWorker = function (bool $autoRefresh) use (&$workers, &$nextId, $dir, $dsn, $resource, $stop): int {
            $id = $nextId++;
            $process = $this->spawn(
                'require $vars["chaos"]."/FencedResource.php"; require $vars["chaos"]."/ChaosWorker.php"; '
                .'Deadbolt\Tests\Chaos\ChaosWorker::run($vars);',
                ['chaos' => __DIR__, 'dir' => $dir, 'dsn' => $dsn, 'resource' => $resource, 'worker' => $id,
                    'autoRefresh' => $autoRefresh, 'stop' => $stop]
            );
            $ready = $process->readLine(30.0);
            if (1 !== preg_match('/^ready (\d+)$/', $ready, $m)) {
                throw new \RuntimeException("worker $id did not start: $ready");
            }
            $workers[$id] = ['process' => $process, 'pid' => (int) $m[1], 'autoRefresh' => $autoRefresh];

            return $id;
        };
        for ($i = 0; $i < self::WORKERS; ++$i) {
            $startWorker(1 === $i % 2);
        }

        $faults = array_fill_keys(self::KINDS, 0);
        $pauses = [];
        $killed = [];
        $faultLog = fopen($dir.'/faults.log', 'a');
        $began = hrtime(true);
        $round = 0;
        $stoppedPid = null;
        try {
            // Round-robin over the kinds (so every kind happens, whatever the timing), random victims and gaps.
            while (0 === $round || hrtime(true) - $began < $duration * 1e9 || $round % \count(self::KINDS) !== 0) {
                usleep(random_int(200_000, 600_000));
                $kind = self::KINDS[$round % \count(self::KINDS)];
                ++$round;
                $t0 = hrtime(true);
                $detail = '';
                switch ($kind) {
                    case 'redis-restart':
                        $server->restart();
                        break;
                    case 'client-kill':
                        $client = $server->client();
                        $detail = 'killed '.$client->rawCommand('CLIENT', 'KILL', 'TYPE', 'normal');
                        $client->close();
                        break;
                    case 'sigstop':
                        $victim = $this->currentHolder($workers, $dir) ?? array_rand($workers);
                        $stoppedPid = $workers[$victim]['pid'];
                        $stopAt = hrtime(true);
                        posix_kill($stoppedPid, SIGSTOP);
                        $heldAtStop = @file_get_contents(sprintf('%s/holding-%03d', $dir, $victim));
                        usleep(1_500_000);
                        posix_kill($stoppedPid, SIGCONT);
                        $stoppedPid = null;
                        $pauses[$victim][] = [$stopAt, hrtime(true)];
                        $detail = "worker $victim (holding: $heldAtStop)";
                        break;
                    case 'sigkill':
                        $victim = array_rand($workers);
                        posix_kill($workers[$victim]['pid'], SIGKILL);
                        $killed[$victim] = true;
                        $replacement = $startWorker($workers[$victim]['autoRefresh']);
                        $detail = "worker $victim, replaced by worker $replacement";
                        break;
                    case 'latency':
                        $proxy->writeLine('delay 50 50');
                        $this->assertSame('ok delay 50 50', $proxy->readLine(10.0));
                        usleep(1_500_000);
                        $proxy->writeLine('delay 0 0');
                        $this->assertSame('ok delay 0 0', $proxy->readLine(10.0));
                        break;
                }
                ++$faults[$kind];
                fwrite($faultLog, sprintf("%s %d %d %s\n", $kind, $t0, hrtime(true), $detail));
            }
        } finally {
            if (null !== $stoppedPid) {
                posix_kill($stoppedPid, SIGCONT);
            }
            touch($stop);
        }

        $exits = [];
        foreach ($workers as $id => $worker) {
            $exit = $worker['process']->waitForExit(60.0);
            $exits[$id] = ['exit' => $exit, 'stderr' => $worker['process']->stderr()];
        }
        $proxy->writeLine('quit');
        $proxy->waitForExit(10.0);
        $elapsed = (hrtime(true) - $began) / 1e9;

        $checker = new HistoryChecker($dir, $pauses, $killed, $exits);
        $checker->check();

        $summary = sprintf("Deadbolt chaos run (%s): %.1f s, %d workers at a time (%d started), TTL %.1f s, acquire(true, %.0f)\n",
            $soak ? 'soak' : 'short', $elapsed, self::WORKERS, \count($workers), ChaosWorker::TTL, ChaosWorker::ACQUIRE_TIMEOUT);
        foreach ($faults as $kind => $count) {
            $summary .= sprintf("  fault %-14s %d\n", $kind, $count);
        }
        foreach ($checker->stats as $name => $value) {
            $summary .= sprintf("  %s: %s\n", $name, $value);
        }
        if ([] !== $checker->violations) {
            $summary .= "VIOLATIONS (first 20 of ".\count($checker->violations)."):\n  ".implode("\n  ", \array_slice($checker->violations, 0, 20))."\n";
        }
        $report = getenv('DEADBOLT_REPORT');
        if (false !== $report && '' !== $report) {
            file_put_contents($report, $summary, FILE_APPEND);
        }
        if ('1' === getenv('DEADBOLT_CHAOS_KEEP')) {
            // Debugging aid: keep the histories.
            @mkdir('/tmp/deadbolt-chaos-last');
            foreach (glob($dir.'/*') ?: [] as $file) {
                copy($file, '/tmp/deadbolt-chaos-last/'.basename($file));
            }
        }

        $this->assertSame([], $checker->violations, $summary);
        foreach (self::KINDS as $kind) {
            $this->assertGreaterThan(0, $faults[$kind], "no $kind fault was injected\n".$summary);
        }
        $this->assertGreaterThan(0, $checker->stats['operations'], $summary);
        $this->assertGreaterThan(0, $checker->stats['accepted writes (resource log)'], $summary);
    }

    /**
     * A worker that says it holds the lock right now (best effort, a few tries): the SIGSTOP then lands in a critical
     * section. Null when none was seen; the caller picks any worker then.
     *
     * @param array<int, array{process: PhpProcess, pid: int, autoRefresh: bool}> $workers
     */
    private function currentHolder(array $workers, string $dir): ?int
    {
        for ($try = 0; $try < 200; ++$try) {
            foreach (array_keys($workers) as $id) {
                if ('1' === @file_get_contents(sprintf('%s/holding-%03d', $dir, $id))) {
                    return $id;
                }
            }
            usleep(1000);
        }

        return null;
    }
}
