<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Examples;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;

/**
 * examples/report.php as the scheduler runs it: real `php` processes with the extension, the store chosen by the
 * environment (examples/Stores.php), one JSON line on stdout. And the deploy/ units it ships with.
 *
 * The Redis tests need DEADBOLT_REDIS_PORT (make test starts a private redis-server) and redis-server itself.
 */
final class ReportJobTest extends DeadboltTestCase
{
    private const SCRIPT = __DIR__ . '/../../examples/report.php';

    private const DEPLOY = __DIR__ . '/../../deploy';

    /** Long enough that the second of two runs started together asks while the first still holds the lock. */
    private const PAIR_WORK_MS = 3000;

    private string $key;

    protected function setUp(): void
    {
        $this->key = 'deadbolt-test:report:' . bin2hex(random_bytes(6));
    }

    public function testTwoRunsAtOnceOnOneLockDirectory(): void
    {
        $dir = $this->tempDir();
        $env = ['LOCK_DIR' => $dir];

        $runs = $this->runPair($env);

        self::assertSame(['acquired', 'skipped'], $this->outcomes($runs), $this->describe($runs));
        // The lock file stays after the runs; it is not held.
        self::assertCount(1, glob($dir . '/sf.*.lock') ?: []);
        self::assertTrue(PhpProcess::canAcquire($dir, $this->key));
        // A run on its own after them acquires.
        $this->assertRun($this->runReport($env + ['REPORT_WORK_MS' => '10']), 'acquired');
    }

    public function testASkippedRunSaysWhoHoldsTheLock(): void
    {
        $port = self::suiteRedisPort();
        $holder = (new \Deadbolt\LockFactory(new \Deadbolt\Store\RedisStore('redis://127.0.0.1:' . $port)))
            ->createLock($this->key, 60.0);
        $holder->setLabel('manual run by ops');
        self::assertTrue($holder->acquire());

        $record = $this->assertRun($this->runReport(['LOCK_REDIS_URL' => 'redis://127.0.0.1:' . $port]), 'skipped');
        self::assertSame('manual run by ops', $record['held_by']['label']);
        self::assertSame(getmypid(), $record['held_by']['pid']);
        self::assertSame(gethostname(), $record['held_by']['host']);
        self::assertIsFloat($record['held_by']['since']);
        $holder->release();

        $dir = $this->tempDir();
        $flock = (new \Deadbolt\LockFactory(new \Deadbolt\Store\FlockStore($dir)))->createLock($this->key);
        self::assertTrue($flock->acquire());
        $record = $this->assertRun($this->runReport(['LOCK_DIR' => $dir]), 'skipped');
        self::assertSame(getmypid(), $record['held_by']['pid'], 'flock: the kernel names the holder');
        $flock->release();
    }

    public function testTwoRunsAtOnceOnRedis(): void
    {
        $port = self::suiteRedisPort();
        $env = ['LOCK_REDIS_URL' => 'redis://127.0.0.1:' . $port];

        $runs = $this->runPair($env);

        self::assertSame(['acquired', 'skipped'], $this->outcomes($runs), $this->describe($runs));
        $redis = new \Redis();
        $redis->connect('127.0.0.1', $port, 2.0);
        self::assertSame(0, $redis->exists($this->key), 'The run that acquired released the Redis key.');
        $this->assertRun($this->runReport($env + ['REPORT_WORK_MS' => '10']), 'acquired');
        self::assertSame(0, $redis->exists($this->key));
    }

    /**
     * LOCK_STORE keeps its meaning when LOCK_REDIS_URL is unset, and refuses a Redis DSN.
     */
    public function testLockStoreSelectsTheFlockOrInMemoryStore(): void
    {
        $dir = $this->tempDir();
        $this->assertRun($this->runReport(['LOCK_STORE' => 'flock://' . $dir, 'REPORT_WORK_MS' => '10']), 'acquired');
        self::assertCount(1, glob($dir . '/sf.*.lock') ?: []);
        $this->assertRun($this->runReport(['LOCK_STORE' => 'in-memory', 'REPORT_WORK_MS' => '10']), 'acquired');

        $secret = 'pw-' . bin2hex(random_bytes(12));
        $run = $this->runReport(['LOCK_STORE' => 'redis://:' . $secret . '@127.0.0.1:1', 'REPORT_WORK_MS' => '10']);
        $record = $this->assertRun($run, 'error');
        self::assertSame('RuntimeException', $record['exception']);
        self::assertStringContainsString('LOCK_REDIS_URL', $run['stderr']);
        $this->assertNotShown($secret, $run);
    }

    public function testPasswordFromLockRedisPasswordOnAProtectedRedis(): void
    {
        // Characters a URL would need encoded: through the environment they need nothing.
        $unique = 'pw-' . bin2hex(random_bytes(16));
        $password = $unique . ' +/?#@:%"\\';
        $server = RedisServer::start(['requirepass' => $password]);
        $url = 'redis://127.0.0.1:' . $server->port;

        // The server really wants the password.
        $anonymous = new \Redis();
        $anonymous->connect('127.0.0.1', $server->port, 2.0);
        try {
            $anonymous->exists($this->key);
            self::fail('The test redis-server must require a password.');
        } catch (\RedisException $e) {
            self::assertStringContainsString('NOAUTH', $e->getMessage());
        }

        $run = $this->runReport(['LOCK_REDIS_URL' => $url, 'LOCK_REDIS_PASSWORD' => $password, 'REPORT_WORK_MS' => '10']);
        $this->assertRun($run, 'acquired');
        $this->assertNotShown($password, $run);
        $this->assertNotShown($unique, $run);

        // Two at once through the password too.
        $runs = $this->runPair(['LOCK_REDIS_URL' => $url, 'LOCK_REDIS_PASSWORD' => $password]);
        self::assertSame(['acquired', 'skipped'], $this->outcomes($runs), $this->describe($runs));
        foreach ($runs as $run) {
            $this->assertNotShown($unique, $run);
        }

        // An explicit password_env in the URL is used as it is.
        $run = $this->runReport(['LOCK_REDIS_URL' => $url . '/0?timeout=1&password_env=LOCK_REDIS_PASSWORD', 'LOCK_REDIS_PASSWORD' => $password, 'REPORT_WORK_MS' => '10']);
        $this->assertRun($run, 'acquired');
        $this->assertNotShown($unique, $run);
    }

    public function testWrongOrMissingPasswordFailsWithoutShowingIt(): void
    {
        $password = 'pw-' . bin2hex(random_bytes(16));
        $wrong = 'wrong-' . bin2hex(random_bytes(16));
        $server = RedisServer::start(['requirepass' => $password]);
        $url = 'redis://127.0.0.1:' . $server->port;

        foreach ([
            'wrong password' => ['LOCK_REDIS_URL' => $url, 'LOCK_REDIS_PASSWORD' => $wrong],
            'no password' => ['LOCK_REDIS_URL' => $url],
        ] as $case => $env) {
            $run = $this->runReport($env + ['REPORT_WORK_MS' => '10']);
            $record = $this->assertRun($run, 'error');
            self::assertSame('Deadbolt\Exception\LockAcquiringException', $record['exception'], $case);
            // The diagnostic names the server and the key's hash, never the key, the password or a user.
            self::assertStringContainsString('127.0.0.1:' . $server->port, $run['stderr'], $case);
            self::assertStringContainsString('<key ' . $record['key_hash'] . '>', $run['stderr'], $case);
            $this->assertNotShown($password, $run);
            $this->assertNotShown($wrong, $run);
        }
    }

    /** A failed acquire reports the time it took (it was 0.0 whatever happened). */
    public function testAFailedAcquireReportsTheTimeItTook(): void
    {
        // A listener that accepts connections (the kernel does) and never answers: the acquire ends at its timeout.
        $silent = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        self::assertNotFalse($silent, $error);
        $port = (int) substr((string) strrchr((string) stream_socket_get_name($silent, false), ':'), 1);
        try {
            $run = $this->runReport(['LOCK_REDIS_URL' => 'redis://127.0.0.1:' . $port . '?timeout=1', 'REPORT_WORK_MS' => '10']);
        } finally {
            fclose($silent);
        }
        $record = $this->assertRun($run, 'error');
        self::assertGreaterThan(0.0, $record['wait_ms']);
        self::assertSame(0.0, $record['hold_ms']);
    }

    public function testPasswordInTheUrl(): void
    {
        $password = 'pw-' . bin2hex(random_bytes(16));
        $server = RedisServer::start(['requirepass' => $password]);
        $url = 'redis://:' . $password . '@127.0.0.1:' . $server->port;

        // Discouraged, but it works, and the password is not shown.
        $run = $this->runReport(['LOCK_REDIS_URL' => $url, 'REPORT_WORK_MS' => '10']);
        $this->assertRun($run, 'acquired');
        $this->assertNotShown($password, $run);

        // In the URL and in LOCK_REDIS_PASSWORD: which one is meant? Refused, showing neither.
        $other = 'other-' . bin2hex(random_bytes(16));
        $run = $this->runReport(['LOCK_REDIS_URL' => $url, 'LOCK_REDIS_PASSWORD' => $other, 'REPORT_WORK_MS' => '10']);
        $record = $this->assertRun($run, 'error');
        self::assertSame('RuntimeException', $record['exception']);
        $this->assertNotShown($password, $run);
        $this->assertNotShown($other, $run);

        // A URL that is not a Redis URL is refused without being quoted.
        $run = $this->runReport(['LOCK_REDIS_URL' => 'http://:' . $password . '@127.0.0.1:1', 'REPORT_WORK_MS' => '10']);
        $this->assertRun($run, 'error');
        $this->assertNotShown($password, $run);
    }

    /**
     * deploy/report.service and report.timer: `systemd-analyze verify` when it is installed (it is on Debian 12
     * with systemd), and in every case the rules deploy/README.md states, read from the files themselves.
     */
    public function testSystemdUnits(): void
    {
        $service = realpath(self::DEPLOY . '/report.service');
        $timer = realpath(self::DEPLOY . '/report.timer');
        self::assertIsString($service);
        self::assertIsString($timer);

        $analyze = self::which('systemd-analyze');
        if ($analyze !== null) {
            $process = proc_open([$analyze, 'verify', $service, $timer], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            self::assertIsResource($process);
            $output = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
            fclose($pipes[1]);
            fclose($pipes[2]);
            $exit = proc_close($process);
            // Unknown keys and bad values are only warnings (exit 0): the output must be empty too.
            self::assertSame([0, ''], [$exit, $output], 'systemd-analyze verify: ' . $output);
        }

        $units = self::parseUnit((string) file_get_contents($service));
        $svc = $units['Service'] ?? [];
        self::assertSame(['oneshot'], $svc['Type'] ?? null);
        self::assertSame(['report-worker'], $svc['User'] ?? null, 'A fixed, dedicated user.');
        self::assertSame(['report-worker'], $svc['Group'] ?? null);
        self::assertSame(['/usr/bin/php /opt/report-app/examples/report.php'], $svc['ExecStart'] ?? null);
        self::assertSame(['/opt/report-app'], $svc['WorkingDirectory'] ?? null);
        self::assertSame(['1h'], $svc['TimeoutStartSec'] ?? null, 'A oneshot has no start timeout of its own: a hung run would block every later one.');
        self::assertSame(['strict'], $svc['ProtectSystem'] ?? null);
        self::assertSame(['yes'], $svc['NoNewPrivileges'] ?? null);

        $environment = [];
        foreach ($svc['Environment'] ?? [] as $assignments) {
            foreach (preg_split('/\s+/', trim($assignments)) ?: [] as $assignment) {
                [$name, $value] = explode('=', trim($assignment, '"'), 2) + [1 => ''];
                $environment[$name] = $value;
            }
        }
        self::assertArrayHasKey('LOCK_DIR', $environment);
        // The job may write its lock directory, and nothing else.
        self::assertSame([$environment['LOCK_DIR']], preg_split('/\s+/', trim(implode(' ', $svc['ReadWritePaths'] ?? []))));
        // No secrets in the unit: no password, no DSN with credentials (they go to a root-only EnvironmentFile).
        foreach ($environment as $name => $value) {
            self::assertDoesNotMatchRegularExpression('/PASSW|SECRET|TOKEN|CREDENTIAL/i', $name);
            self::assertDoesNotMatchRegularExpression('~://[^/@\s]*@~', $value, 'No user or password in a URL of the unit.');
        }
        foreach ($svc['EnvironmentFile'] ?? [] as $file) {
            self::assertMatchesRegularExpression('~\A-?/etc/~', $file);
        }

        $timerUnits = self::parseUnit((string) file_get_contents($timer));
        self::assertNotEmpty($timerUnits['Timer']['OnCalendar'] ?? []);
        self::assertContains($timerUnits['Timer']['Unit'] ?? ['report.service'], [['report.service']]);
        self::assertSame(['timers.target'], $timerUnits['Install']['WantedBy'] ?? null);

        // The cron alternative uses the same user, LOCK_DIR and script.
        $cron = array_values(array_filter(
            file(self::DEPLOY . '/report.cron', FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [],
            static fn (string $line): bool => !str_starts_with(ltrim($line), '#'),
        ));
        self::assertCount(1, $cron);
        self::assertMatchesRegularExpression('~\A(\S+\s+){5}report-worker\s~', $cron[0]);
        self::assertStringContainsString('LOCK_DIR=' . $environment['LOCK_DIR'] . ' ', $cron[0]);
        self::assertStringContainsString('/usr/bin/php /opt/report-app/examples/report.php', $cron[0]);
        self::assertDoesNotMatchRegularExpression('/PASSW/i', $cron[0]);
        // ... and the same time of day as the timer (the timer ran at 00:00, the cron line at 03:15).
        [$minute, $hour] = preg_split('/\s+/', $cron[0]);
        self::assertSame([sprintf('*-*-* %02d:%02d:00', (int) $hour, (int) $minute)], $timerUnits['Timer']['OnCalendar']);
    }

    /** The ACL line deploy/README.md gives ops is exactly the rule set tests/Security/RedisAclTest.php runs under. */
    public function testTheDeployGuidesAclLineIsTheTestedOne(): void
    {
        $readme = (string) file_get_contents(self::DEPLOY . '/README.md');
        self::assertSame(1, preg_match('/^ACL SETUSER report-worker on >PASSWORD (.+)$/m', $readme, $line), 'the ACL line');
        $rules = str_replace('~app:*', '~myapp:*', \Deadbolt\Tests\Security\RedisAclTest::RULES);
        self::assertSame($rules, explode(' ', trim($line[1])));
    }

    /**
     * @param array<string, string> $env
     *
     * @return list<array{exit: int, stdout: string, stderr: string}> both runs, started together
     */
    private function runPair(array $env): array
    {
        $env += ['REPORT_WORK_MS' => (string) self::PAIR_WORK_MS];
        $first = $this->startReport($env);
        $second = $this->startReport($env);

        return [$this->finish($first), $this->finish($second)];
    }

    /**
     * @param array<string, string> $env
     *
     * @return array{exit: int, stdout: string, stderr: string}
     */
    private function runReport(array $env): array
    {
        return $this->finish($this->startReport($env));
    }

    /**
     * A `php -d extension=DEADBOLT_SO examples/report.php` process with only PATH, PHP's scan directory and `$env` in
     * its environment. The scan directory is scripts/php.sh's (the system's ini files without any that loads an
     * installed deadbolt): without it, a machine with Deadbolt installed loaded it twice in the child.
     *
     * @param array<string, string> $env
     *
     * @return array{0: resource, 1: array<int, resource>}
     */
    private function startReport(array $env): array
    {
        $command = deadbolt_php_command();
        $command[] = (string) realpath(self::SCRIPT);
        $env = ['PATH' => (string) getenv('PATH'), 'REPORT_LOCK_KEY' => $this->key] + $env;
        if (false !== getenv('PHP_INI_SCAN_DIR')) {
            $env['PHP_INI_SCAN_DIR'] = (string) getenv('PHP_INI_SCAN_DIR');
        }
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes, sys_get_temp_dir(), $env);
        if ($process === false) {
            throw new \RuntimeException('proc_open() failed for ' . implode(' ', $command));
        }

        return [$process, $pipes];
    }

    /**
     * @param array{0: resource, 1: array<int, resource>} $started
     *
     * @return array{exit: int, stdout: string, stderr: string}
     */
    private function finish(array $started): array
    {
        [$process, $pipes] = $started;
        $output = [1 => '', 2 => ''];
        $open = [1 => $pipes[1], 2 => $pipes[2]];
        $deadline = hrtime(true) + 60_000_000_000;
        while ($open !== []) {
            if (hrtime(true) > $deadline) {
                proc_terminate($process, SIGKILL);
                proc_close($process);
                throw new \RuntimeException("report.php ran longer than 60 s: killed.\nstdout: {$output[1]}\nstderr: {$output[2]}");
            }
            $read = array_values($open);
            $write = $except = null;
            if ((int) @stream_select($read, $write, $except, 0, 200_000) === 0) {
                continue;
            }
            foreach ($open as $fd => $pipe) {
                if (in_array($pipe, $read, true)) {
                    $chunk = (string) fread($pipe, 65536);
                    $output[$fd] .= $chunk;
                    if ($chunk === '' && feof($pipe)) {
                        fclose($pipe);
                        unset($open[$fd]);
                    }
                }
            }
        }

        return ['exit' => proc_close($process), 'stdout' => $output[1], 'stderr' => $output[2]];
    }

    /**
     * The run's one JSON line, checked against report.php's contract.
     *
     * @param array{exit: int, stdout: string, stderr: string} $run
     *
     * @return array<string, mixed>
     */
    private function assertRun(array $run, string $outcome): array
    {
        $describe = $this->describe([$run]);
        self::assertSame($outcome === 'error' ? 1 : 0, $run['exit'], $describe);
        self::assertSame(1, substr_count($run['stdout'], "\n"), $describe);
        self::assertStringEndsWith("\n", $run['stdout'], $describe);
        $record = json_decode($run['stdout'], true, 8, JSON_THROW_ON_ERROR);
        self::assertSame($outcome, $record['outcome'], $describe);
        self::assertSame('report.lock', $record['event']);
        self::assertSame(substr(hash('sha256', $this->key), 0, 16), $record['key_hash']);
        self::assertMatchesRegularExpression('/\A[0-9a-f]{16}\z/', $record['job_id']);
        self::assertIsInt($record['pid']);
        self::assertSame($record['job_id'], $record['label'], 'the caller label: the job id outside systemd');
        self::assertIsFloat($record['wait_ms']);
        self::assertIsFloat($record['hold_ms']);
        if ($outcome === 'error') {
            self::assertArrayHasKey('exception', $record);
            self::assertStringContainsString('report.php job ' . $record['job_id'] . ': ', $run['stderr']);
        } else {
            self::assertArrayNotHasKey('exception', $record);
            self::assertSame('', $run['stderr'], $describe);
        }
        // The log line and the diagnostic name the key by its hash only.
        self::assertStringNotContainsString($this->key, $run['stdout']);
        self::assertStringNotContainsString(substr($this->key, strrpos($this->key, ':') + 1), $run['stdout']);
        self::assertStringNotContainsString($this->key, $run['stderr']);

        return $record;
    }

    /**
     * @param array{exit: int, stdout: string, stderr: string} $run
     */
    private function assertNotShown(#[\SensitiveParameter] string $secret, array $run): void
    {
        // Not assertStringNotContainsString(): its failure message would print the secret.
        self::assertFalse(str_contains($run['stdout'], $secret), 'The password appears on stdout.');
        self::assertFalse(str_contains($run['stderr'], $secret), 'The password appears on stderr.');
    }

    /**
     * @param list<array{exit: int, stdout: string, stderr: string}> $runs
     *
     * @return list<string> the outcomes, sorted
     */
    private function outcomes(array $runs): array
    {
        $outcomes = [];
        foreach ($runs as $run) {
            $outcomes[] = $this->assertRun($run, json_decode($run['stdout'], true)['outcome'] ?? 'unparsable')['outcome'];
        }
        sort($outcomes);

        return $outcomes;
    }

    /**
     * @param list<array{exit: int, stdout: string, stderr: string}> $runs
     */
    private function describe(array $runs): string
    {
        return implode("\n", array_map(
            static fn (array $run): string => sprintf("exit %d\nstdout: %s\nstderr: %s", $run['exit'], $run['stdout'], $run['stderr']),
            $runs,
        ));
    }

    private static function suiteRedisPort(): int
    {
        $port = getenv('DEADBOLT_REDIS_PORT');
        if ($port === false || !ctype_digit($port)) {
            self::fail('DEADBOLT_REDIS_PORT is not set: these tests need a real redis-server (make test starts one; by hand: port=$(bash scripts/redis-start.sh /tmp/r) and DEADBOLT_REDIS_PORT=$port).');
        }

        return (int) $port;
    }

    private static function which(string $binary): ?string
    {
        foreach (array_unique([...explode(PATH_SEPARATOR, (string) getenv('PATH')), '/usr/bin', '/bin']) as $dir) {
            if ($dir !== '' && is_executable($dir . '/' . $binary)) {
                return $dir . '/' . $binary;
            }
        }

        return null;
    }

    /**
     * A systemd unit file as [section][key] => list of values (keys may repeat), comments and blank lines left out.
     *
     * @return array<string, array<string, list<string>>>
     */
    private static function parseUnit(string $text): array
    {
        $units = [];
        $section = '';
        foreach (preg_split('/\R/', $text) ?: [] as $line) {
            $line = trim($line);
            if ($line === '' || $line[0] === '#' || $line[0] === ';') {
                continue;
            }
            if (preg_match('/\A\[(.+)\]\z/', $line, $m) === 1) {
                $section = $m[1];
                continue;
            }
            [$key, $value] = array_map('trim', explode('=', $line, 2) + [1 => '']);
            $units[$section][$key][] = $value;
        }

        return $units;
    }
}
