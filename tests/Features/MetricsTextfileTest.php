<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Tests\Support\PhpProcess;

/**
 * `deadbolt.metrics_textfile`: real php processes that end (normally, after a reset, through a fork, of a fatal
 * error) add their totals to a node_exporter textfile, whole and without losing a run when several end at once.
 * Synchronisation: the jobs say "ready" and then block on a flock gate the test holds; the gate opens once all are
 * ready, so they end together.
 */
final class MetricsTextfileTest extends FeatureTestCase
{
    private const JOBS = 6;

    /** @var list<PhpProcess> killed in tearDown if a failure left them running */
    private array $jobs = [];

    protected function tearDown(): void
    {
        foreach ($this->jobs as $job) {
            $job->kill();
        }
        $this->jobs = [];
        parent::tearDown();
    }

    public function testJobsEndingAtOnceAddUpInOneFileThatIsNeverSeenTorn(): void
    {
        $dir = $this->tempDir();
        mkdir($dir.'/textfiles');
        $file = $dir.'/textfiles/deadbolt-report.prom';
        $gate = fopen($dir.'/gate', 'c');
        $this->assertNotFalse($gate);
        $this->assertTrue(flock($gate, LOCK_EX));
        $jobs = [];
        $expected = 0;
        for ($job = 1; $job <= self::JOBS; ++$job) {
            $expected += $job;
            $jobs[] = $this->job($file, <<<'PHP'
                $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
                for ($i = 0; $i < $vars['cycles']; ++$i) {
                    $lock = $factory->createLock('textfile-'.getmypid());
                    $lock->acquire();
                    $lock->release();
                }
                echo "ready\n";
                flock(fopen($vars['gate'], 'r'), LOCK_SH);
                PHP, ['dir' => $dir, 'cycles' => $job, 'gate' => $dir.'/gate']);
        }
        foreach ($jobs as $job) {
            $this->assertSame('ready', $job->readLine());
        }
        $this->assertFileDoesNotExist($file, 'nothing is written before a process ends');

        // Open the gate: all end at once; every read meanwhile finds no file, or a whole one, until the last run's
        // numbers are in.
        flock($gate, LOCK_UN);
        $pattern = '/^deadbolt_acquired_total\{textfile="deadbolt-report"\} '.$expected.'$/m';
        for ($reads = 0; ; ++$reads) {
            $text = @file_get_contents($file);
            if (false !== $text) {
                $this->assertWhole($text);
                if (1 === preg_match($pattern, $text)) {
                    break;
                }
            }
            $this->assertLessThan(100_000, $reads, "the runs' numbers did not all arrive:\n".$text);
            usleep(200);
        }
        foreach ($jobs as $job) {
            $this->assertSame(0, $job->waitForExit(), $job->stderr());
            $this->assertSame('', $job->stdout(), 'nothing after ready');
            $this->assertSame('', $job->stderr(), 'no warning');
        }

        $text = (string) file_get_contents($file);
        $this->assertWhole($text);
        $samples = self::samples($text);
        $this->assertSame($expected, $samples['deadbolt_acquired_total{textfile="deadbolt-report"}'], "every run counted:\n$text");
        $this->assertSame($expected, $samples['deadbolt_released_total{textfile="deadbolt-report"}']);
        $this->assertSame($expected, $samples['deadbolt_wait_seconds_count{textfile="deadbolt-report"}']);
        $this->assertSame($expected, $samples['deadbolt_hold_seconds_bucket{textfile="deadbolt-report",le="+Inf"}']);
        $this->assertSame(['.', '..', 'deadbolt-report.prom', 'deadbolt-report.prom.lock'], scandir(\dirname($file)), 'no temporary file left');
    }

    public function testAResetAForkedChildAndAFatalErrorLoseNothingAndCountNothingTwice(): void
    {
        $dir = $this->tempDir();
        $file = $dir.'/job.prom';
        $result = PhpProcess::run(<<<'PHP'
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
            $cycle = static function (int $n) use ($factory): void {
                for ($i = 0; $i < $n; ++$i) {
                    $lock = $factory->createLock('job-'.getmypid());
                    $lock->acquire();
                    $lock->release();
                }
            };
            $cycle(2);
            Deadbolt\Metrics::reset();          // the application's own reset: still this job's work
            $cycle(1);
            $pid = pcntl_fork();
            if (0 === $pid) {
                $cycle(3);                      // the child adds its own when it ends
                exit(0);
            }
            pcntl_waitpid($pid, $status);
            $held = $factory->createLock('held-'.getmypid());
            $held->acquire();                   // released as PHP frees it after the fatal error
            deadbolt_textfile_no_such_function();
            PHP, ['dir' => $dir], true, 60.0, $this->command($file));
        $this->assertSame(255, $result['exit'], 'the fatal error ended the parent');
        $this->assertStringContainsString('deadbolt_textfile_no_such_function', $result['stdout'].$result['stderr']);
        $samples = self::samples((string) file_get_contents($file));
        $this->assertSame(2 + 1 + 3 + 1, $samples['deadbolt_acquired_total{textfile="job"}']);
        $this->assertSame(2 + 1 + 3 + 1, $samples['deadbolt_released_total{textfile="job"}']);
    }

    public function testAnUnusablePlaceIsAWarningThatSaysWhatToDoAndAForeignFileIsLeftAlone(): void
    {
        $dir = $this->tempDir();
        $result = PhpProcess::run('echo "done\n";', [], true, 60.0, $this->command($dir.'/missing/job.prom'));
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $output = $result['stdout'].$result['stderr'];
        $this->assertStringContainsString('done', $output);
        $this->assertStringContainsString('Warning', $output);
        $this->assertStringContainsString($dir.'/missing/job.prom', $output);
        $this->assertStringContainsString('create its directory first', $output);

        $foreign = $dir.'/node.prom';
        file_put_contents($foreign, "node_custom_metric 1\n");
        $result = PhpProcess::run('echo "done\n";', [], true, 60.0, $this->command($foreign));
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertStringContainsString('was not written by Deadbolt', $result['stdout'].$result['stderr']);
        $this->assertSame("node_custom_metric 1\n", file_get_contents($foreign), 'left as it was');
    }

    /**
     * @param array<string, mixed> $vars
     */
    private function job(string $file, string $code, array $vars): PhpProcess
    {
        return $this->jobs[] = PhpProcess::start($code, $vars, true, $this->command($file));
    }

    /** @return list<string> */
    private function command(string $file): array
    {
        return array_merge(deadbolt_php_command(true), ['-d', 'deadbolt.metrics_textfile='.$file, '-d', 'display_errors=stderr']);
    }

    private function assertWhole(string $text): void
    {
        $this->assertStringStartsWith('# Deadbolt metrics textfile, format 1:', $text);
        $this->assertMatchesRegularExpression('/\ndeadbolt_hold_seconds_count\{textfile="[^"]+"\} \d+\n$/', $text, "a whole file:\n$text");
    }

    /** @return array<string, int|float> */
    private static function samples(string $text): array
    {
        $samples = [];
        foreach (explode("\n", trim($text)) as $line) {
            if ('' === $line || '#' === $line[0]) {
                continue;
            }
            [$series, $value] = explode(' ', $line);
            $samples[$series] = str_contains($value, '.') || str_contains($value, 'e') ? (float) $value : (int) $value;
        }

        return $samples;
    }
}
