<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Runtime;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A real php-fpm pool (Debian's php-fpmX.Y) with the extension loaded, driven over FastCGI by Debian's cgi-fcgi from
 * four concurrent client loops. Each request takes a lock (FlockStore or a RedisStore from a DSN) and then releases
 * it, forgets it (the object dies at the end of the request), calls exit(), dies of a fatal error (call to an
 * undefined function) or throws an uncaught exception.
 *
 * Judges: the pool itself (same worker pids from the warm-up to the end, pm.max_requests = 0, the master alive, no
 * signal or non-zero exit in the FPM log, nothing on the workers' stderr), a fresh php process that must be able to
 * take every resource afterwards (non-blocking), Redis (no lock key left, only #deadbolt: companions), CLIENT LIST
 * matched against the workers' sockets in /proc (one connection per worker, the same one in every wave), and
 * /proc/<pid>/status (worker RSS flat between the warm-up and the end of the main wave).
 *
 * Short by default (~2000 requests); DEADBOLT_SOAK=1 drives ~50000. DEADBOLT_REPORT names a file that gets a summary
 * line.
 */
final class PhpFpmTest extends DeadboltTestCase
{
    /** A database of its own, so that every connection to it comes from this test. */
    private const DB = 9;

    private const WORKERS = 4;

    private const CLIENTS = 4;

    private const KINDS = ['release', 'forget', 'exit', 'fatal', 'throw'];

    private const STORES = ['flock', 'redis'];

    private const RESOURCES_PER_STORE = 8;

    /** RSS growth allowed per worker between the warm-up and the end, in kB. */
    private const RSS_BOUND_KB = 2048;

    private const WARMUP_WAVE = 200;

    /** @var resource|null */
    private $fpm = null;

    /** @var list<PhpProcess> client loops, killed in tearDown if a failure left them running */
    private array $clients = [];

    private string $dir = '';

    protected function tearDown(): void
    {
        foreach ($this->clients as $client) {
            $client->kill();
        }
        $this->clients = [];
        $this->stopFpm();
    }

    public function testLocksNeverOutliveTheirRequestAndWorkersStayHealthy(): void
    {
        $total = '1' === getenv('DEADBOLT_SOAK') ? 50_000 : 2_000;
        $this->dir = $this->tempDir();
        $lockDir = $this->dir.'/locks';
        mkdir($lockDir);
        $prefix = 'fpm-'.bin2hex(random_bytes(5)).'-';
        $dsn = SharedRedis::dsn('/'.self::DB);
        $script = $this->writeRequestScript($lockDir, $dsn);
        $master = $this->startFpm();
        // Opened after the master started: php-fpm inherits the test process's open sockets.
        $inspector = SharedRedis::newPhpRedis();
        $inspector->select(self::DB);
        $inspectorId = (int) $inspector->rawCommand('CLIENT', 'ID');

        $resources = [];
        foreach (self::STORES as $store) {
            for ($i = 0; $i < self::RESOURCES_PER_STORE; ++$i) {
                $resources[$store][] = $prefix.$store.'-'.$i;
            }
        }
        $plan = static function (int $count, int $seed) use ($resources): array {
            mt_srand($seed);
            $requests = [];
            for ($i = 0; $i < $count; ++$i) {
                $store = self::STORES[$i % 2];
                $kind = self::KINDS[intdiv($i, 2) % \count(self::KINDS)];
                $requests[] = ['store' => $store, 'kind' => $kind, 'res' => $resources[$store][mt_rand(0, self::RESOURCES_PER_STORE - 1)]];
            }
            shuffle($requests);

            return $requests;
        };

        // Grow the pool to pm.max_children: waves of requests that only sleep a little (no lock), four at a time, until
        // the master has spawned every worker. Not counted as lock requests.
        for ($try = 0; self::WORKERS !== \count(self::workerPids($master)); ++$try) {
            $this->assertLessThan(30, $try, 'the pool did not grow to '.self::WORKERS.' workers: '.implode(',', self::workerPids($master)));
            $this->drive($script, array_fill(0, 2 * self::CLIENTS, ['store' => 'none', 'kind' => 'pause', 'res' => '']));
        }
        $workers = self::workerPids($master);

        // Warm-up: waves until every worker has served both stores (at least two waves).
        $stats = self::emptyStats();
        $warmupRequests = 0;
        for ($wave = 0; ; ++$wave) {
            $result = $this->drive($script, $plan(self::WARMUP_WAVE, 1000 + $wave));
            $warmupRequests += self::WARMUP_WAVE;
            self::merge($stats, $result);
            $servedBoth = array_filter($workers, static fn (int $pid): bool => isset($stats['pids']['flock'][$pid], $stats['pids']['redis'][$pid]));
            if ($wave >= 1 && \count($servedBoth) === self::WORKERS) {
                break;
            }
            $this->assertLessThan(30, $wave, sprintf(
                'not every worker served both stores after %d warm-up requests (workers: %s; served: %s)',
                $warmupRequests,
                implode(',', $workers),
                json_encode($stats['pids'])
            ));
        }
        $this->assertSame($workers, self::workerPids($master), 'the same workers served the whole warm-up');
        $this->assertPoolHealthy($master, 'after the warm-up');
        $rssBefore = self::rss($workers);
        $connectionsBefore = $this->connectionsOf($inspector, $inspectorId, $workers);
        foreach ($workers as $pid) {
            $this->assertCount(1, $connectionsBefore[$pid], sprintf(
                'worker %d served Redis requests during the warm-up and has exactly one connection to the DSN\'s database (CLIENT LIST ids: %s)',
                $pid,
                json_encode($connectionsBefore)
            ));
        }
        $this->assertSame(
            self::WORKERS,
            self::clientsInDatabase($inspector, $inspectorId),
            'the connections to the DSN\'s database are the workers\' own, one each: '.json_encode($inspector->client('list'))
        );

        // Main wave.
        $mainRequests = $total - $warmupRequests;
        $result = $this->drive($script, $plan($mainRequests, 7));
        self::merge($stats, $result);

        $this->assertPoolHealthy($master, 'after the main wave');
        $this->assertSame($workers, self::workerPids($master), 'the same workers served the whole run (none died and was replaced)');
        $rssAfter = self::rss($workers);
        $connectionsAfter = $this->connectionsOf($inspector, $inspectorId, $workers);
        $this->assertSame($connectionsBefore, $connectionsAfter, 'every worker kept its one Redis connection across the waves');
        $this->assertSame(
            self::WORKERS,
            self::clientsInDatabase($inspector, $inspectorId),
            'still one connection per worker after the main wave: '.json_encode($inspector->client('list'))
        );

        $summary = sprintf(
            'php-fpm: %d requests (%d warm-up, %d main) by %d clients on %d workers; per kind %s; per store %s; refused %d; RSS kB before %s after %s',
            $stats['requests'],
            $warmupRequests,
            $mainRequests,
            self::CLIENTS,
            \count($workers),
            json_encode($stats['kinds']),
            json_encode($stats['stores']),
            $stats['refused'],
            json_encode($rssBefore),
            json_encode($rssAfter)
        );
        $report = getenv('DEADBOLT_REPORT');
        if (\is_string($report) && '' !== $report) {
            file_put_contents($report, $summary."\n", FILE_APPEND);
        }

        $this->assertSame([], $stats['unexpected'], "every request answered as planned\n".$summary);
        $this->assertSame(0, $stats['refused'], "no request found its lock held for 10 s (a lock outliving its request)\n".$summary);
        $this->assertSame($total, $stats['requests'], $summary);
        foreach ($workers as $pid) {
            $this->assertLessThan(
                self::RSS_BOUND_KB,
                $rssAfter[$pid] - $rssBefore[$pid],
                sprintf('worker %d RSS grew from %d kB to %d kB over the main wave', $pid, $rssBefore[$pid], $rssAfter[$pid])."\n".$summary
            );
        }

        // The errors PHP logged are exactly those the requests caused.
        $phpLog = (string) @file_get_contents($this->dir.'/php.log');
        $this->assertSame(
            $stats['kinds']['fatal'],
            substr_count($phpLog, 'Call to undefined function deadbolt_fpm_no_such_function()'),
            'one fatal error logged per "fatal" request'
        );
        $this->assertSame(
            $stats['kinds']['throw'],
            substr_count($phpLog, 'Uncaught RuntimeException: deadbolt-fpm uncaught'),
            'one uncaught exception logged per "throw" request'
        );
        $this->assertSame(
            $stats['kinds']['fatal'] + $stats['kinds']['throw'],
            substr_count($phpLog, 'PHP Fatal error:'),
            "no other error in the workers' PHP log:\n".substr(preg_replace('/^.*(?:deadbolt_fpm_no_such_function|deadbolt-fpm uncaught).*\n(?:(?:Stack trace:|#\d|  thrown).*\n)*/m', '', $phpLog) ?? '', 0, 3000)
        );

        // No lock outlived its request: a fresh process takes every resource at once, while the workers still run.
        $probe = PhpProcess::run(<<<'PHP'
            $refused = [];
            foreach ($vars['resources'] as $store => $names) {
                $factory = new Deadbolt\LockFactory('redis' === $store
                    ? new Deadbolt\Store\RedisStore($vars['dsn'])
                    : new Deadbolt\Store\FlockStore($vars['lockDir']));
                foreach ($names as $name) {
                    $lock = $factory->createLock($name, 30.0);
                    if ($lock->acquire(false)) {
                        $lock->release();
                    } else {
                        $refused[] = $store.':'.$name;
                    }
                }
            }
            echo json_encode($refused);
            PHP, ['resources' => $resources, 'dsn' => $dsn, 'lockDir' => $lockDir]);
        $this->assertSame(0, $probe['exit'], 'the probe process failed: '.$probe['stderr']);
        $this->assertSame('[]', $probe['stdout'], 'resources still held after every request ended: '.$probe['stdout']);

        $left = [];
        $iterator = null;
        while (false !== ($keys = $inspector->scan($iterator, '*'.$prefix.'*', 1000))) {
            foreach ($keys as $key) {
                if (!str_contains($key, '#deadbolt:')) {
                    $left[] = $key.' ('.$inspector->type($key).', pttl '.$inspector->pttl($key).')';
                }
            }
            if (0 === $iterator) {
                break;
            }
        }
        $this->assertSame([], $left, 'Redis lock keys left after every request ended (only the #deadbolt: companions may remain)');

        $this->assertPoolHealthy($master, 'at the end');
        $inspector->close();
    }

    /**
     * @return array{requests: int, kinds: array<string, int>, stores: array<string, int>, refused: int, unexpected: list<string>, pids: array<string, array<int, int>>}
     */
    private static function emptyStats(): array
    {
        return [
            'requests' => 0,
            'kinds' => array_fill_keys(self::KINDS, 0),
            'stores' => array_fill_keys(self::STORES, 0),
            'refused' => 0,
            'unexpected' => [],
            'pids' => ['flock' => [], 'redis' => []],
        ];
    }

    /**
     * @param array<string, mixed> $stats
     * @param array<string, mixed> $result
     */
    private static function merge(array &$stats, array $result): void
    {
        $stats['requests'] += $result['requests'];
        foreach ($result['kinds'] as $kind => $n) {
            $stats['kinds'][$kind] += $n;
        }
        foreach ($result['stores'] as $store => $n) {
            $stats['stores'][$store] += $n;
        }
        $stats['refused'] += $result['refused'];
        foreach ($result['pids'] as $store => $pids) {
            foreach ($pids as $pid => $n) {
                $stats['pids'][$store][$pid] = ($stats['pids'][$store][$pid] ?? 0) + $n;
            }
        }
        $stats['unexpected'] = array_slice(array_merge($stats['unexpected'], $result['unexpected']), 0, 20);
    }

    /**
     * Sends the requests over FastCGI with cgi-fcgi from CLIENTS concurrent client loops (each a php process running
     * one cgi-fcgi at a time) and checks each answer against what its kind must print.
     *
     * @param list<array{store: string, kind: string, res: string}> $requests
     *
     * @return array<string, mixed> stats of this wave, with 'pids' => [store => [worker pid => requests]]
     */
    private function drive(string $script, array $requests): array
    {
        $slices = array_fill(0, self::CLIENTS, []);
        foreach ($requests as $i => $request) {
            $slices[$i % self::CLIENTS][] = $request;
        }
        $clients = [];
        foreach ($slices as $slice) {
            $clients[] = $this->spawnClient($script, $slice);
        }
        $stats = self::emptyStats();
        foreach ($clients as $client) {
            $client->closeStdin();
            $exit = $client->waitForExit(600.0);
            $this->assertSame(0, $exit, 'a client loop failed: '.$client->stderr());
            $lines = json_decode($client->stdout(), true);
            $this->assertIsArray($lines, 'a client loop printed no result: '.$client->stdout().$client->stderr());
            foreach ($lines as [$request, $rc, $body]) {
                if ('pause' === $request['kind']) {
                    $this->assertMatchesRegularExpression('/^PAUSE \d+\n$/', $body, 'a pause request');
                    continue;
                }
                ++$stats['requests'];
                ++$stats['kinds'][$request['kind']];
                ++$stats['stores'][$request['store']];
                $expected = match ($request['kind']) {
                    'release' => "ACQ %d\nREL\nEND\n",
                    'forget' => "ACQ %d\nEND\n",
                    default => "ACQ %d\n",
                };
                if (1 === preg_match('/^REFUSED (\d+)\n$/', $body)) {
                    ++$stats['refused'];
                    continue;
                }
                $pid = 1 === sscanf($body, 'ACQ %d', $pid) ? $pid : 0;
                if (0 !== $rc || sprintf($expected, $pid) !== $body) {
                    $stats['unexpected'][] = sprintf('%s: cgi-fcgi exit %d, body %s', json_encode($request), $rc, json_encode($body));
                    continue;
                }
                $stats['pids'][$request['store']][$pid] = ($stats['pids'][$request['store']][$pid] ?? 0) + 1;
            }
        }

        return $stats;
    }

    /**
     * @param list<array{store: string, kind: string, res: string}> $requests
     */
    private function spawnClient(string $script, array $requests): PhpProcess
    {
        return $this->spawnWithoutExtension(<<<'PHP'
            $results = [];
            foreach ($vars['requests'] as $request) {
                $env = [
                    'SCRIPT_FILENAME' => $vars['script'],
                    'REQUEST_METHOD' => 'GET',
                    'QUERY_STRING' => http_build_query($request),
                    'PATH' => '/usr/bin:/bin',
                ];
                $process = proc_open(['cgi-fcgi', '-bind', '-connect', $vars['socket']], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, null, $env);
                $response = stream_get_contents($pipes[1]);
                $errors = stream_get_contents($pipes[2]);
                fclose($pipes[1]);
                fclose($pipes[2]);
                $rc = proc_close($process);
                $split = strpos($response, "\r\n\r\n");
                $body = false === $split ? 'NO BODY: '.$response.$errors : substr($response, $split + 4);
                $results[] = [$request, $rc, $body.('' !== $errors ? 'STDERR: '.$errors : '')];
            }
            echo json_encode($results);
            PHP, ['requests' => $requests, 'script' => $script, 'socket' => $this->dir.'/fpm.sock']);
    }

    /**
     * @param array<string, mixed> $vars
     */
    private function spawnWithoutExtension(string $code, array $vars): PhpProcess
    {
        // DeadboltTestCase::spawn() loads the extension; the clients need none. Killed in tearDown if still running.
        return $this->clients[] = PhpProcess::start($code, $vars, false);
    }

    private function writeRequestScript(string $lockDir, string $dsn): string
    {
        $script = $this->dir.'/request.php';
        file_put_contents($script, sprintf(<<<'PHP'
            <?php
            declare(strict_types=1);

            if ('pause' === $_GET['kind']) {
                usleep(300_000); // keeps this worker busy so that the master spawns the next one
                echo 'PAUSE ', getmypid(), "\n";

                return;
            }
            $store = 'redis' === $_GET['store']
                ? new Deadbolt\Store\RedisStore(%s)
                : new Deadbolt\Store\FlockStore(%s);
            $lock = (new Deadbolt\LockFactory($store))->createLock((string) $_GET['res'], 300.0);
            if (!$lock->acquire(true, 10.0)) {
                echo 'REFUSED ', getmypid(), "\n";

                return;
            }
            echo 'ACQ ', getmypid(), "\n";
            switch ($_GET['kind']) {
                case 'release':
                    $lock->release();
                    echo "REL\n";
                    break;
                case 'forget':
                    break; // $lock is still held; it dies with the request's globals
                case 'exit':
                    exit(0);
                case 'fatal':
                    deadbolt_fpm_no_such_function();
                    break;
                case 'throw':
                    throw new RuntimeException('deadbolt-fpm uncaught');
            }
            echo "END\n";

            PHP, var_export($dsn, true), var_export($lockDir, true)));

        return $script;
    }

    /**
     * Starts php-fpm in the foreground as a child of the test process and waits until it accepts connections.
     *
     * @return int the master's pid
     */
    private function startFpm(): int
    {
        $dir = $this->dir;
        file_put_contents($dir.'/fpm.conf', <<<CONF
            [global]
            pid = {$dir}/fpm.pid
            error_log = {$dir}/fpm.log
            log_level = notice
            daemonize = no

            [deadbolt]
            listen = {$dir}/fpm.sock
            pm = dynamic
            pm.max_children = 4
            pm.start_servers = 2
            pm.min_spare_servers = 2
            pm.max_spare_servers = 4
            pm.max_requests = 0
            catch_workers_output = yes
            decorate_workers_output = yes
            php_admin_value[error_log] = {$dir}/php.log
            php_admin_flag[log_errors] = on
            php_admin_flag[display_errors] = off
            php_admin_value[error_reporting] = -1

            CONF);
        $command = [deadbolt_php_fpm_binary(), '-n', '-d', 'extension='.DEADBOLT_SO, '-y', $dir.'/fpm.conf', '-F'];
        if (0 === posix_geteuid()) {
            $command[] = '-R';
        }
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['file', $dir.'/fpm.out', 'a'], 2 => ['file', $dir.'/fpm.out', 'a']], $pipes);
        $this->assertNotFalse($process, 'proc_open(php-fpm) failed');
        $this->fpm = $process;
        $deadline = hrtime(true) + 20_000_000_000;
        while (!str_contains((string) @file_get_contents($dir.'/fpm.log'), 'ready to handle connections')) {
            if (!proc_get_status($process)['running'] || hrtime(true) > $deadline) {
                $this->fail("php-fpm did not start:\n".@file_get_contents($dir.'/fpm.out').@file_get_contents($dir.'/fpm.log'));
            }
            usleep(20_000);
        }

        return proc_get_status($process)['pid'];
    }

    private function stopFpm(): void
    {
        if (null === $this->fpm) {
            return;
        }
        $status = proc_get_status($this->fpm);
        if ($status['running']) {
            posix_kill($status['pid'], SIGQUIT);
            $deadline = hrtime(true) + 10_000_000_000;
            while (proc_get_status($this->fpm)['running'] && hrtime(true) < $deadline) {
                usleep(20_000);
            }
            if (proc_get_status($this->fpm)['running']) {
                posix_kill($status['pid'], SIGKILL);
            }
        }
        proc_close($this->fpm);
        $this->fpm = null;
    }

    private function assertPoolHealthy(int $master, string $when): void
    {
        $this->assertNotNull($this->fpm);
        $this->assertTrue(proc_get_status($this->fpm)['running'], "the fpm master is alive $when");
        $this->assertFileExists("/proc/$master/status", "the fpm master is alive $when");
        $log = (string) @file_get_contents($this->dir.'/fpm.log');
        $bad = preg_grep('/SIGSEGV|SIGBUS|SIGABRT|exited on signal|exited with code [1-9]|said into std(?:err|out)|panicked|ERROR/', explode("\n", $log));
        $this->assertSame([], array_values($bad), "the fpm log shows no crashed worker and no worker output $when:\n".substr($log, -3000));
    }

    /**
     * @return list<int> the pids of the master's children (the pool's workers), sorted
     */
    private static function workerPids(int $master): array
    {
        $pids = [];
        foreach (glob('/proc/[0-9]*', GLOB_ONLYDIR) ?: [] as $dir) {
            $pid = (int) basename($dir);
            // A process that exits while we list /proc has no stat left: it is not one of the pool's workers.
            if ((int) (self::procStat($pid)[1] ?? 0) === $master) {
                $pids[] = $pid;
            }
        }
        sort($pids);

        return $pids;
    }

    /**
     * @param list<int> $pids
     *
     * @return array<int, int> VmRSS in kB per pid
     */
    private static function rss(array $pids): array
    {
        $rss = [];
        foreach ($pids as $pid) {
            $status = (string) @file_get_contents("/proc/$pid/status");
            $rss[$pid] = 1 === preg_match('/^VmRSS:\s+(\d+) kB/m', $status, $m) ? (int) $m[1] : -1;
        }

        return $rss;
    }

    /**
     * @param list<int> $workers
     *
     * @return array<int, list<int>> per worker pid, the client ids of its connections to the DSN's database
     */
    private function connectionsOf(\Redis $inspector, int $inspectorId, array $workers): array
    {
        $connections = [];
        foreach ($workers as $pid) {
            $ids = SharedRedis::clientIdsOfProcess($inspector, $pid, SharedRedis::port(), self::DB);
            $connections[$pid] = array_values(array_diff($ids, [$inspectorId]));
        }

        return $connections;
    }

    private static function clientsInDatabase(\Redis $inspector, int $inspectorId): int
    {
        $count = 0;
        foreach ($inspector->client('list') as $client) {
            if ((int) $client['db'] === self::DB && (int) $client['id'] !== $inspectorId) {
                ++$count;
            }
        }

        return $count;
    }
}
