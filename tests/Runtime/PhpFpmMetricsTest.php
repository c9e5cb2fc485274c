<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Runtime;

use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * `deadbolt.metrics_file` in a real php-fpm (Debian's php-fpmX.Y), driven over FastCGI by cgi-fcgi: the workers of
 * a pool add up in one file, so one scrape, whichever worker answers, shows the pool's totals, while each worker's
 * own numbers stay its own.
 *
 * Three pools: "a" (two static workers) adds to the file set for the whole of php-fpm (`-d`, read by the master
 * before it forks), "b" (one worker) to a file of its own (`php_admin_value`, opened by its worker), "c" names a file
 * in a missing directory (a warning in its log, the worker unharmed). Synchronisation is by
 * files and flock only: the two "a" requests each write a ready file and then block on a gate the test holds, so
 * each of the two workers is known to serve one of them before the gate opens.
 */
final class PhpFpmMetricsTest extends DeadboltTestCase
{
    /** @var resource|null */
    private $fpm = null;

    private string $dir = '';

    protected function tearDown(): void
    {
        if (null !== $this->fpm) {
            $status = proc_get_status($this->fpm);
            if ($status['running']) {
                posix_kill($status['pid'], SIGQUIT);
                for ($i = 0; $i < 500 && proc_get_status($this->fpm)['running']; ++$i) {
                    usleep(20_000);
                }
                if (proc_get_status($this->fpm)['running']) {
                    posix_kill($status['pid'], SIGKILL);
                }
            }
            proc_close($this->fpm);
            $this->fpm = null;
        }
    }

    public function testOneScrapeOfAnyWorkerShowsThePoolsTotalsAndEachPoolHasItsOwn(): void
    {
        $this->dir = $this->tempDir();
        mkdir($this->dir.'/locks');
        $script = $this->writeRequestScript();
        $this->startFpm();
        $gate = fopen($this->dir.'/gate', 'c');
        $this->assertNotFalse($gate);
        $this->assertTrue(flock($gate, LOCK_EX));

        // Two requests at once on pool a's two workers: 3 and 4 lock cycles, then each waits at the gate.
        $first = $this->request('a', ['kind' => 'work', 'cycles' => 3, 'ready' => 'r1']);
        $second = $this->request('a', ['kind' => 'work', 'cycles' => 4, 'ready' => 'r2']);
        $this->awaitReady('r1', 'r2');
        flock($gate, LOCK_UN);
        $workers = [self::body($first), self::body($second)];
        $this->assertSame(3, $workers[0]['process']['acquired'], 'the first worker counted its own work');
        $this->assertSame(4, $workers[1]['process']['acquired'], 'the second worker counted its own work');
        $this->assertNotSame($workers[0]['pid'], $workers[1]['pid'], 'two workers served them');

        // Pool b, its own file: 5 cycles.
        $this->assertSame(5, self::body($this->request('b', ['kind' => 'work', 'cycles' => 5]))['process']['acquired']);

        // Scrapes: both workers of pool a at once (each waits at the gate before it reads), each answering with the
        // pool's totals and with its own numbers apart.
        $this->assertTrue(flock($gate, LOCK_EX));
        $scrapes = [
            $this->request('a', ['kind' => 'scrape', 'ready' => 's1']),
            $this->request('a', ['kind' => 'scrape', 'ready' => 's2']),
        ];
        $this->awaitReady('s1', 's2');
        flock($gate, LOCK_UN);
        $seen = [];
        foreach ($scrapes as $request) {
            $scrape = self::body($request);
            $seen[] = $scrape['pid'];
            $this->assertSame(7, $scrape['shared']['acquired'], 'the pool\'s acquired total, whichever worker answers');
            $this->assertSame(7, $scrape['shared']['released']);
            $this->assertSame(7, $scrape['wait_count'], 'one wait observation per acquire, in the pool\'s histogram');
            $this->assertContains('deadbolt_acquired_total 7', explode("\n", $scrape['prometheus']));
            $own = array_column($workers, 'process', 'pid')[$scrape['pid']]['acquired'];
            $this->assertSame($own, $scrape['process']['acquired'], 'Metrics::PROCESS stays the worker\'s own');
        }
        sort($seen);
        $pids = array_column($workers, 'pid');
        sort($pids);
        $this->assertSame($pids, $seen, 'each worker of pool a answered one scrape');
        $b = self::body($this->request('b', ['kind' => 'scrape']));
        $this->assertSame(5, $b['shared']['acquired'], 'pool b adds to its own file only');

        // Pool c names a file in a directory that does not exist: its worker works and counts its own numbers, logs
        // one warning that says what to do, and Metrics::SHARED says the same.
        $this->assertSame(2, self::body($this->request('c', ['kind' => 'work', 'cycles' => 2]))['process']['acquired']);
        $c = self::body($this->request('c', ['kind' => 'why']));
        $this->assertStringContainsString($this->dir.'/missing/c.metrics', $c['why']);
        $this->assertStringContainsString('create its directory first', $c['why']);
        $this->assertSame(2, $c['process']['acquired']);
        $log = (string) file_get_contents($this->dir.'/c.log');
        $this->assertSame(1, substr_count($log, 'PHP Warning:'), "one warning, at the worker's first request:\n$log");
        $this->assertStringContainsString($c['why'], $log);
        $this->assertFileExists($this->dir.'/a.metrics');
        $this->assertFileExists($this->dir.'/b.metrics');
        $this->assertStringNotContainsString('deadbolt', (string) @file_get_contents($this->dir.'/fpm.log'));
        $this->assertSame('', (string) @file_get_contents($this->dir.'/php.log'), 'no warning, no error');
    }

    /** Waits (polling the file system, no deadline asserted on timing alone) until each named ready file exists. */
    private function awaitReady(string ...$names): void
    {
        for ($i = 0; ; ++$i) {
            $missing = array_filter($names, fn (string $name): bool => !is_file($this->dir.'/'.$name));
            if ([] === $missing) {
                return;
            }
            $this->assertLessThan(3000, $i, 'each worker took its request ('.implode(', ', $missing)." missing):\n".$this->logs());
            usleep(20_000);
        }
    }

    private function writeRequestScript(): string
    {
        $script = $this->dir.'/request.php';
        file_put_contents($script, sprintf(<<<'PHP'
            <?php
            declare(strict_types=1);

            use Deadbolt\Metrics;

            $dir = %s;
            if ('work' === $_GET['kind']) {
                $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($dir.'/locks'));
                for ($i = 0; $i < (int) $_GET['cycles']; ++$i) {
                    $lock = $factory->createLock('fpm-metrics-'.getmypid());
                    $lock->acquire();
                    $lock->release();
                }
            }
            if (isset($_GET['ready'])) {
                touch($dir.'/'.$_GET['ready']);
                $gate = fopen($dir.'/gate', 'r');
                flock($gate, LOCK_SH); // the test opens the gate once both workers are here
            }
            if ('why' === $_GET['kind']) {
                try {
                    Metrics::snapshot(Metrics::SHARED);
                    echo json_encode(['why' => null]);
                } catch (Deadbolt\Exception\InvalidArgumentException $e) {
                    echo json_encode(['why' => $e->getMessage(), 'process' => Metrics::snapshot()['counters']]);
                }

                return;
            }
            echo json_encode([
                'pid' => getmypid(),
                'process' => Metrics::snapshot(Metrics::PROCESS)['counters'],
                'shared' => 'scrape' === $_GET['kind'] ? Metrics::snapshot(Metrics::SHARED)['counters'] : null,
                'wait_count' => 'scrape' === $_GET['kind'] ? Metrics::snapshot(Metrics::SHARED)['timings']['wait_seconds']['count'] : null,
                'prometheus' => 'scrape' === $_GET['kind'] ? Metrics::prometheus(Metrics::SHARED) : null,
            ]);

            PHP, var_export($this->dir, true)));

        return $script;
    }

    /**
     * Starts one FastCGI request on a pool's socket; the response is read by body().
     *
     * @param array<string, int|string> $query
     *
     * @return array{resource, array<int, resource>}
     */
    private function request(string $pool, array $query): array
    {
        $env = [
            'SCRIPT_FILENAME' => $this->dir.'/request.php',
            'REQUEST_METHOD' => 'GET',
            'QUERY_STRING' => http_build_query($query),
            'PATH' => '/usr/bin:/bin',
        ];
        $process = proc_open(['cgi-fcgi', '-bind', '-connect', "{$this->dir}/$pool.sock"], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
        $this->assertNotFalse($process, 'cgi-fcgi');

        return [$process, $pipes];
    }

    /**
     * @param array{resource, array<int, resource>} $request
     *
     * @return array<string, mixed>
     */
    private static function body(array $request): array
    {
        [$process, $pipes] = $request;
        $response = (string) stream_get_contents($pipes[1]);
        $errors = (string) stream_get_contents($pipes[2]);
        fclose($pipes[1]);
        fclose($pipes[2]);
        proc_close($process);
        $split = strpos($response, "\r\n\r\n");
        $body = false === $split ? '' : substr($response, $split + 4);
        $decoded = json_decode($body, true);
        self::assertIsArray($decoded, "a JSON answer, got: $response $errors");

        return $decoded;
    }

    private function startFpm(): void
    {
        $dir = $this->dir;
        file_put_contents($dir.'/fpm.conf', <<<CONF
            [global]
            pid = {$dir}/fpm.pid
            error_log = {$dir}/fpm.log
            log_level = notice
            daemonize = no

            [a]
            listen = {$dir}/a.sock
            pm = static
            pm.max_children = 2
            catch_workers_output = yes
            php_admin_value[error_log] = {$dir}/php.log
            php_admin_flag[log_errors] = on
            php_admin_flag[display_errors] = off
            php_admin_value[error_reporting] = -1

            [c]
            listen = {$dir}/c.sock
            pm = static
            pm.max_children = 1
            catch_workers_output = yes
            php_admin_value[deadbolt.metrics_file] = {$dir}/missing/c.metrics
            php_admin_value[error_log] = {$dir}/c.log
            php_admin_flag[log_errors] = on
            php_admin_flag[display_errors] = off
            php_admin_value[error_reporting] = -1

            [b]
            listen = {$dir}/b.sock
            pm = static
            pm.max_children = 1
            catch_workers_output = yes
            php_admin_value[deadbolt.metrics_file] = {$dir}/b.metrics
            php_admin_value[error_log] = {$dir}/php.log
            php_admin_flag[log_errors] = on
            php_admin_flag[display_errors] = off
            php_admin_value[error_reporting] = -1

            CONF);
        $command = [
            deadbolt_php_fpm_binary(), '-n', '-d', 'extension='.DEADBOLT_SO,
            '-d', "deadbolt.metrics_file={$dir}/a.metrics", '-y', $dir.'/fpm.conf', '-F',
        ];
        if (0 === posix_geteuid()) {
            $command[] = '-R';
        }
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $dir.'/fpm.out', 'a'], 2 => ['file', $dir.'/fpm.out', 'a']], $pipes);
        $this->assertNotFalse($process, 'proc_open(php-fpm) failed');
        $this->fpm = $process;
        for ($i = 0; !str_contains((string) @file_get_contents($dir.'/fpm.log'), 'ready to handle connections'); ++$i) {
            if (!proc_get_status($process)['running'] || $i > 1000) {
                $this->fail("php-fpm did not start:\n".$this->logs());
            }
            usleep(20_000);
        }
    }

    private function logs(): string
    {
        return @file_get_contents($this->dir.'/fpm.out').@file_get_contents($this->dir.'/fpm.log').@file_get_contents($this->dir.'/php.log');
    }
}
