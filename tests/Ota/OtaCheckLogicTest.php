<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Ota;

use app\constant\OtaErrorCode;
use app\exception\BusinessException;
use app\logic\LegacyOtaCheckLogic;
use app\logic\OtaCheckLogic;
use app\logic\SymfonyOtaCheckLogic;
use app\repository\UpgradeTaskRepository;
use app\support\OtaLockFactory;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\RedisServer;
use support\Log;
use support\Redis;

/**
 * The OTA service example (examples/ota) against a real redis-server: the Deadbolt version (OtaCheckLogic) and the
 * hand-written one it replaces (LegacyOtaCheckLogic) must behave the same, with forked workers as in webman.
 *
 * The seed's skip guard, kept: without a Redis (DEADBOLT_REDIS_PORT unset, or nothing answers there) every test here is
 * skipped, as in the OTA team's suite. The project's own runs set DEADBOLT_REQUIRE_REDIS=1 (scripts/test-php.sh),
 * which makes a missing Redis a failure instead. The test that stops a server of its own also needs redis-server.
 */
final class OtaCheckLogicTest extends DeadboltTestCase
{
    private const WORKERS = 8;

    private const BUSY_MESSAGE = 'OTA lock busy: giving up';

    private const RELEASE_FAILED_MESSAGE = 'OTA lock release failed: the TTL will free it';

    private const EXAMPLE_BOOTSTRAP = __DIR__ . '/../../examples/ota/bootstrap.php';

    private int $port;

    private \Redis $redis;

    private string $logFile;

    private string $deviceId;

    private string $firmwareId;

    public static function setUpBeforeClass(): void
    {
        require_once self::EXAMPLE_BOOTSTRAP;
    }

    protected function setUp(): void
    {
        [$this->port, $this->redis] = self::redisOrSkip();

        Redis::configure(['host' => '127.0.0.1', 'port' => $this->port]);
        $this->logFile = $this->tempDir() . '/ota.log';
        Log::configure($this->logFile);

        $this->deviceId = 'test-device-' . bin2hex(random_bytes(6));
        $this->firmwareId = 'fw-' . random_int(1, 999_999);
    }

    protected function tearDown(): void
    {
        if (isset($this->redis)) {
            $this->redis->del($this->tasksKey(), $this->lockKey());
            $this->redis->close();
        }
        Redis::configure(null);
        Log::configure(null);
    }

    /**
     * @return iterable<string, array{class-string}>
     */
    public static function implementations(): iterable
    {
        yield 'Deadbolt' => [OtaCheckLogic::class];
        yield 'Symfony-typed, through the bridge' => [SymfonyOtaCheckLogic::class];
        yield 'legacy SET NX + Lua' => [LegacyOtaCheckLogic::class];
    }

    /**
     * @return iterable<string, array{class-string, class-string}>
     */
    public static function holderAndContender(): iterable
    {
        yield 'Deadbolt holds, Deadbolt waits' => [OtaCheckLogic::class, OtaCheckLogic::class];
        yield 'legacy holds, legacy waits' => [LegacyOtaCheckLogic::class, LegacyOtaCheckLogic::class];
        // A rolling deploy: old and new workers on the same key still exclude each other.
        yield 'legacy holds, Deadbolt waits' => [LegacyOtaCheckLogic::class, OtaCheckLogic::class];
        yield 'Deadbolt holds, legacy waits' => [OtaCheckLogic::class, LegacyOtaCheckLogic::class];
        yield 'Symfony-typed holds, legacy waits' => [SymfonyOtaCheckLogic::class, LegacyOtaCheckLogic::class];
        yield 'legacy holds, Symfony-typed waits' => [LegacyOtaCheckLogic::class, SymfonyOtaCheckLogic::class];
        yield 'Symfony-typed holds, Deadbolt waits' => [SymfonyOtaCheckLogic::class, OtaCheckLogic::class];
    }

    /**
     * @dataProvider implementations
     *
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('implementations')]
    public function testConcurrentWorkersLeaveExactlyOneTask(string $class): void
    {
        // The check-then-create window is widened so that unguarded workers would all create a task.
        $logic = new $class(new UpgradeTaskRepository(createLatencyUs: 20_000));
        // The parent's pool is connected before the fork, as in a webman master: each child must open its own.
        self::assertTrue(Redis::connection()->client()->ping());

        $workers = [];
        for ($i = 0; $i < self::WORKERS; ++$i) {
            $workers[] = $this->fork(function (Channel $channel) use ($logic): void {
                $channel->send('ready');
                if ($channel->receive() !== 'go') {
                    throw new \RuntimeException('Expected "go".');
                }
                try {
                    $result = $logic->checkUpgrade($this->deviceId, $this->firmwareId);
                    $report = ['outcome' => $result['created'] ? 'created' : 'reused', 'task_id' => $result['task_id']];
                } catch (BusinessException $e) {
                    $report = ['outcome' => 'busy', 'code' => $e->getCode()];
                }
                $channel->send(json_encode($report + ['pid' => getmypid()], JSON_THROW_ON_ERROR));
            });
        }
        // The barrier: every worker is up and waiting before any of them starts.
        foreach ($workers as $worker) {
            self::assertSame('ready', $worker->receive());
        }
        foreach ($workers as $worker) {
            $worker->send('go');
        }
        $reports = [];
        foreach ($workers as $worker) {
            $reports[] = json_decode($worker->receive(), true, 8, JSON_THROW_ON_ERROR);
        }
        foreach ($workers as $worker) {
            $worker->wait();
        }

        $byOutcome = ['created' => [], 'reused' => [], 'busy' => []];
        foreach ($reports as $report) {
            self::assertArrayHasKey($report['outcome'], $byOutcome);
            $byOutcome[$report['outcome']][] = $report;
        }
        $summary = json_encode($reports);
        self::assertCount(1, $byOutcome['created'], 'Exactly one worker creates the task: ' . $summary);
        $taskId = $byOutcome['created'][0]['task_id'];
        foreach ($byOutcome['reused'] as $report) {
            self::assertSame($taskId, $report['task_id'], 'A reusing worker gets the created task: ' . $summary);
        }
        foreach ($byOutcome['busy'] as $report) {
            self::assertSame(OtaErrorCode::SERVICE_BUSY, $report['code'], $summary);
        }
        self::assertSame(self::WORKERS, count($byOutcome['created']) + count($byOutcome['reused']) + count($byOutcome['busy']));

        // The "table": one task, the one the creator reported, for this device and firmware.
        $rows = $this->redis->hGetAll($this->tasksKey());
        self::assertSame([$taskId], array_keys($rows), 'The tasks hash holds exactly one task id.');
        $row = json_decode($rows[$taskId], true, 8, JSON_THROW_ON_ERROR);
        self::assertSame([$this->deviceId, $this->firmwareId, 'pending'], [$row['device_id'], $row['firmware_id'], $row['status']]);
        self::assertSame($byOutcome['created'][0]['pid'], $row['created_by']);

        // Every busy worker logged its warning; nothing else was logged (no release failed).
        $busyPids = array_column($byOutcome['busy'], 'pid');
        sort($busyPids);
        $loggedPids = [];
        foreach ($this->logRecords() as $record) {
            self::assertSame(['warning', self::BUSY_MESSAGE], [$record['level'], $record['message']], json_encode($record));
            self::assertSame($this->lockKey(), $record['context']['lock']);
            self::assertSame($class::LOCK_MAX_RETRY, $record['context']['attempts']);
            $loggedPids[] = $record['pid'];
        }
        sort($loggedPids);
        self::assertSame($busyPids, $loggedPids);

        // All locks were released, and the parent's own connection survived the children.
        self::assertSame(0, $this->redis->exists($this->lockKey()));
        self::assertTrue(Redis::connection()->client()->ping());
        $again = $logic->checkUpgrade($this->deviceId, $this->firmwareId);
        self::assertSame([$taskId, false], [$again['task_id'], $again['created']]);
    }

    /**
     * @dataProvider implementations
     *
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('implementations')]
    public function testReusesTheActiveTaskAndCreatesOnePerFirmware(string $class): void
    {
        $logic = new $class();

        $first = $logic->checkUpgrade($this->deviceId, $this->firmwareId);
        self::assertTrue($first['created']);
        self::assertSame($first['task_id'], $first['task']['task_id']);

        // Another "request": the pool hands out a new connection; the check still finds the task.
        Redis::recycle();
        $second = $logic->checkUpgrade($this->deviceId, $this->firmwareId);
        self::assertFalse($second['created']);
        self::assertSame($first['task_id'], $second['task_id']);
        self::assertSame($first['task'], $second['task']);

        // A task that is over is not reused.
        $done = $first['task'];
        $done['status'] = 'succeeded';
        $this->redis->hSet($this->tasksKey(), $done['task_id'], json_encode($done));
        $third = $logic->checkUpgrade($this->deviceId, $this->firmwareId);
        self::assertTrue($third['created']);
        self::assertNotSame($first['task_id'], $third['task_id']);

        // Another firmware of the same device is another task.
        $other = $logic->checkUpgrade($this->deviceId, $this->firmwareId . '-next');
        self::assertTrue($other['created']);
        self::assertSame(3, $this->redis->hLen($this->tasksKey()));
        $this->redis->del($this->lockKey($this->firmwareId . '-next'));

        self::assertSame(0, $this->redis->exists($this->lockKey()));
        self::assertSame([], $this->logRecords());
    }

    /**
     * @dataProvider holderAndContender
     *
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $holderClass
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $contenderClass
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('holderAndContender')]
    public function testServiceBusyWhileAnotherProcessHoldsTheLock(string $holderClass, string $contenderClass): void
    {
        $holder = $this->fork(function (Channel $channel) use ($holderClass): void {
            (new $holderClass())->withDeviceFirmwareLock($this->deviceId, $this->firmwareId, static function () use ($channel): void {
                $channel->send('held');
                if ($channel->receive() !== 'release') {
                    throw new \RuntimeException('Expected "release".');
                }
            });
            $channel->send('released');
        });
        self::assertSame('held', $holder->receive());

        $contender = new $contenderClass();
        try {
            $contender->checkUpgrade($this->deviceId, $this->firmwareId);
            self::fail('checkUpgrade() must give up while another process holds the lock.');
        } catch (BusinessException $e) {
            self::assertSame(OtaErrorCode::SERVICE_BUSY, $e->getCode());
            self::assertSame(OtaErrorCode::message(OtaErrorCode::SERVICE_BUSY), $e->getMessage());
        }
        self::assertSame(0, $this->redis->hLen($this->tasksKey()), 'Nothing was created without the lock.');
        $records = $this->logRecords();
        self::assertCount(1, $records);
        self::assertSame(['warning', self::BUSY_MESSAGE, getmypid()], [$records[0]['level'], $records[0]['message'], $records[0]['pid']]);
        self::assertSame(
            ['lock' => $this->lockKey(), 'attempts' => $contenderClass::LOCK_MAX_RETRY, 'retry_interval_us' => $contenderClass::LOCK_RETRY_INTERVAL_US],
            $records[0]['context'],
        );

        $holder->send('release');
        self::assertSame('released', $holder->receive());
        $holder->wait();
        self::assertSame(0, $this->redis->exists($this->lockKey()));

        $result = $contender->checkUpgrade($this->deviceId, $this->firmwareId);
        self::assertTrue($result['created']);
        self::assertCount(1, $this->logRecords());
    }

    /**
     * The release fails (Redis went away during the critical section): the failure is a warning, and the caller
     * gets the critical section's result.
     *
     * @dataProvider implementations
     *
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('implementations')]
    public function testReleaseQuietlyOnlyLogsAFailedRelease(string $class): void
    {
        $server = RedisServer::start();
        // A fresh php process (not a fork of PHPUnit): whatever the failed release does to it, the suite goes on.
        $worker = $this->spawn(<<<'PHP'
            require $vars['bootstrap'];
            support\Redis::configure(['host' => '127.0.0.1', 'port' => $vars['port']]);
            support\Log::configure($vars['log']);
            $logic = new $vars['class']();
            $result = $logic->withDeviceFirmwareLock($vars['device'], $vars['firmware'], static function (): string {
                echo "held\n";
                if (trim((string) fgets(STDIN)) !== 'go') {
                    throw new RuntimeException('Expected "go".');
                }

                return 'section done';
            });
            echo "returned: $result\n";
            PHP, [
            'bootstrap' => realpath(self::EXAMPLE_BOOTSTRAP),
            'port' => $server->port,
            'log' => $this->logFile,
            'class' => $class,
            'device' => $this->deviceId,
            'firmware' => $this->firmwareId,
        ]);
        self::assertSame('held', $worker->readLine());
        $server->stop();
        $worker->writeLine('go');
        $exit = $worker->waitForExit();

        $records = $this->logRecords();
        self::assertCount(1, $records, 'One warning for the failed release: ' . json_encode($records));
        self::assertSame(['warning', self::RELEASE_FAILED_MESSAGE], [$records[0]['level'], $records[0]['message']]);
        self::assertSame($this->lockKey(), $records[0]['context']['lock']);
        self::assertSame($class::LOCK_TTL_SECONDS, $records[0]['context']['ttl_s']);
        self::assertNotEmpty($records[0]['context']['exception']['class'] ?? null);

        $diagnostic = sprintf("exit %d\nstdout: %s\nstderr: %s", $exit, $worker->stdout(), $worker->stderr());
        self::assertSame("returned: section done\n", $worker->stdout(), 'withDeviceFirmwareLock() returns the result after a failed release. ' . $diagnostic);
        self::assertSame('', $worker->stderr(), $diagnostic);
        self::assertSame(0, $exit, $diagnostic);
    }

    /**
     * OtaLockFactory builds its store on the connection the pool hands out at that moment, not on an earlier one.
     */
    public function testLockFactoryUsesTheCurrentPoolConnection(): void
    {
        $before = Redis::connection()->client();
        $beforeName = $before->client('getname');
        Redis::recycle();
        $current = Redis::connection()->client();
        $currentName = $current->client('getname');
        self::assertNotSame($before, $current);
        self::assertNotSame($beforeName, $currentName);

        $lock = OtaLockFactory::create($this->lockKey(), 5.0);
        self::assertTrue($lock->acquire(false));
        self::assertSame('zset', $this->typeName($this->redis->type($this->lockKey())));
        $lastCommands = [];
        foreach ($this->redis->client('list') as $client) {
            $lastCommands[$client['name']] = $client['cmd'];
        }
        self::assertArrayNotHasKey($beforeName, $lastCommands, 'The recycled connection stays closed.');
        self::assertContains($lastCommands[$currentName] ?? null, ['evalsha', 'eval'], 'The lock ran its script on the current connection.');

        // The TTL is the one asked for.
        $ttl = $this->redis->pTtl($this->lockKey());
        self::assertGreaterThan(0, $ttl);
        self::assertLessThanOrEqual(5000, $ttl);
        $lock->release();
        self::assertSame(0, $this->redis->exists($this->lockKey()));
    }

    /**
     * @dataProvider implementations
     *
     * @param class-string<OtaCheckLogic|SymfonyOtaCheckLogic|LegacyOtaCheckLogic> $class
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('implementations')]
    public function testRejectsIdsThatCouldSpellAnotherKey(string $class): void
    {
        foreach ([['1:2', '3'], ['1', ''], ['1', "2\n"], ['', '2']] as [$deviceId, $firmwareId]) {
            try {
                (new $class())->checkUpgrade($deviceId, $firmwareId);
                self::fail(sprintf('checkUpgrade(%s, %s) must be refused.', json_encode($deviceId), json_encode($firmwareId)));
            } catch (BusinessException $e) {
                self::assertSame(OtaErrorCode::INVALID_PARAM, $e->getCode());
            }
        }
        self::assertSame([], $this->redis->keys(OtaCheckLogic::LOCK_KEY_PREFIX . '1*'));
    }

    /**
     * The skip guard: a connection to the Redis these tests run against, or the test is skipped when there is none
     * (failed instead under DEADBOLT_REQUIRE_REDIS=1).
     *
     * @return array{int, \Redis}
     */
    private static function redisOrSkip(): array
    {
        $port = getenv('DEADBOLT_REDIS_PORT');
        if ($port === false || !ctype_digit($port)) {
            $absent = 'DEADBOLT_REDIS_PORT is not set';
        } else {
            $redis = new \Redis();
            try {
                if ($redis->connect('127.0.0.1', (int) $port, 2.0) && $redis->ping()) {
                    return [(int) $port, $redis];
                }
            } catch (\RedisException) {
                // Nothing answers: no Redis.
            }
            $absent = "no Redis answers on 127.0.0.1:$port (DEADBOLT_REDIS_PORT)";
        }
        $start = 'make test starts one; by hand: port=$(bash scripts/redis-start.sh /tmp/r) and DEADBOLT_REDIS_PORT=$port';
        if (getenv('DEADBOLT_REQUIRE_REDIS') === '1') {
            self::fail("$absent, and DEADBOLT_REQUIRE_REDIS=1 makes a missing Redis a failure ($start).");
        }
        self::markTestSkipped("$absent: these tests need a real redis-server ($start).");
    }

    private function tasksKey(): string
    {
        return UpgradeTaskRepository::tasksKey($this->deviceId);
    }

    private function lockKey(?string $firmwareId = null): string
    {
        return OtaCheckLogic::LOCK_KEY_PREFIX . $this->deviceId . ':' . ($firmwareId ?? $this->firmwareId);
    }

    private function typeName(int $type): string
    {
        return [\Redis::REDIS_STRING => 'string', \Redis::REDIS_ZSET => 'zset', \Redis::REDIS_HASH => 'hash', \Redis::REDIS_NOT_FOUND => 'none'][$type] ?? (string) $type;
    }

    /**
     * @return list<array{time: string, level: string, message: string, context: array<string, mixed>, pid: int}>
     */
    private function logRecords(): array
    {
        if (!is_file($this->logFile)) {
            return [];
        }
        $records = [];
        foreach (file($this->logFile, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
            $records[] = json_decode($line, true, 16, JSON_THROW_ON_ERROR);
        }

        return $records;
    }
}
