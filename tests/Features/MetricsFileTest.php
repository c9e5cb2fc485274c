<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Tests\Support\PhpProcess;

/**
 * `deadbolt.metrics_file` outside php-fpm, in real php processes: the totals outlive a process, a forked child adds
 * to them, `Metrics::reset()` leaves them alone, and a file that is not this version's is refused with a warning
 * that says what to do (the same words `Metrics::SHARED` throws), never a fatal error, and is left as it was. The
 * php-fpm case is tests/Runtime/PhpFpmMetricsTest.php.
 */
final class MetricsFileTest extends FeatureTestCase
{
    private const CYCLE = <<<'PHP'
        $cycle = static function (int $n) use ($vars): void {
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
            for ($i = 0; $i < $n; ++$i) {
                $lock = $factory->createLock('file-'.getmypid());
                $lock->acquire();
                $lock->release();
            }
        };

        PHP;

    public function testProcessesAndTheirForkedChildrenAddUpAndTheTotalsOutliveThem(): void
    {
        $dir = $this->tempDir();
        $file = $dir.'/cli.metrics';
        $first = $this->runWithFile(self::CYCLE.<<<'PHP'
            $cycle(2);
            echo Deadbolt\Metrics::snapshot(Deadbolt\Metrics::SHARED)['counters']['acquired'];
            PHP, $dir, $file);
        $this->assertSame('2', $first['stdout']);

        $second = $this->runWithFile(self::CYCLE.<<<'PHP'
            $cycle(1);
            Deadbolt\Metrics::reset();                      // this process's numbers only
            $pid = pcntl_fork();
            if (0 === $pid) {
                $cycle(3);                                  // a forked child adds to the file too
                exit(0);
            }
            pcntl_waitpid($pid, $status);
            echo json_encode([
                'process' => Deadbolt\Metrics::snapshot()['counters']['acquired'],
                'shared' => Deadbolt\Metrics::snapshot(Deadbolt\Metrics::SHARED)['counters']['acquired'],
                'prometheus' => Deadbolt\Metrics::prometheus(Deadbolt\Metrics::SHARED),
            ]);
            PHP, $dir, $file);
        $numbers = json_decode($second['stdout'], true);
        $this->assertSame(0, $numbers['process'], 'reset() and the child\'s work leave this process at 0');
        $this->assertSame(2 + 1 + 3, $numbers['shared'], 'the first process, this one and its child');
        $this->assertContains('deadbolt_acquired_total 6', explode("\n", $numbers['prometheus']));
    }

    public function testAFileOfAnotherVersionIsRefusedWithAWarningAndLeftAsItWas(): void
    {
        $dir = $this->tempDir();
        $file = $dir.'/old.metrics';
        $old = 'deadbolt-metrics'.pack('V', 0).str_repeat("\0", 44 + 8 * 40);
        file_put_contents($file, $old);
        $result = PhpProcess::run(self::CYCLE.<<<'PHP'
            $cycle(1);
            try {
                Deadbolt\Metrics::snapshot(Deadbolt\Metrics::SHARED);
            } catch (Deadbolt\Exception\InvalidArgumentException $e) {
                echo 'THROWN: ', $e->getMessage(), "\n";
            }
            echo 'acquired ', Deadbolt\Metrics::snapshot()['counters']['acquired'], "\n";
            PHP, ['dir' => $dir], true, 60.0, [...$this->command($file), '-d', 'display_startup_errors=1']);
        // A warning of the request's start: logged as PHP logs such warnings, shown with display_startup_errors.
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertStringContainsString('Warning', $result['stderr']);
        $this->assertStringContainsString("$file was written by another version of Deadbolt", $result['stderr']);
        $this->assertStringContainsString('remove it', $result['stderr']);
        $this->assertStringContainsString("THROWN: $file was written by another version of Deadbolt", $result['stdout']);
        $this->assertStringContainsString('acquired 1', $result['stdout'], 'the process still counts its own');
        $this->assertSame($old, file_get_contents($file), 'the file is left as it was');
    }

    /**
     * @return array{exit: int, stdout: string, stderr: string}
     */
    private function runWithFile(string $code, string $dir, string $file): array
    {
        $result = PhpProcess::run($code, ['dir' => $dir], true, 60.0, $this->command($file));
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame('', $result['stderr']);

        return $result;
    }

    /** @return list<string> */
    private function command(string $file): array
    {
        return array_merge(deadbolt_php_command(true), ['-d', 'deadbolt.metrics_file='.$file]);
    }
}
