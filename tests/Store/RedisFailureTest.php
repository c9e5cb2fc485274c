<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockReleasingException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Redis failing under a RedisStore, on private servers: stopped, frozen, restarted, password-protected, evicting.
 */
final class RedisFailureTest extends DeadboltTestCase
{
    private const PASSWORD = 'correct-horse-battery-staple-7f3a';
    private const PASSWORD_ENV = 'DEADBOLT_TEST_REDIS_PASSWORD';

    /** @var list<RedisServer> */
    private array $servers = [];

    protected function tearDown(): void
    {
        foreach ($this->servers as $server) {
            $server->stop();
        }
        $this->servers = [];
        putenv(self::PASSWORD_ENV);
    }

    public function testWhileRedisIsDownEveryOperationFailsNamingTheServerAndTheSameObjectsWorkOnceItIsBack(): void
    {
        $server = $this->server();
        $endpoint = '127.0.0.1:'.$server->port;
        $store = new RedisStore($server->dsn());
        $factory = new LockFactory($store);
        $held = $factory->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertTrue($held->acquire());
        $other = $factory->createLock(uniqid(__METHOD__, true), 30.0);

        $server->stop();

        $e = $this->caught(static fn () => $other->acquire());
        $this->assertInstanceOf(LockAcquiringException::class, $e);
        $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
        $this->assertStringContainsString($endpoint, $e->getPrevious()->getMessage());
        $this->assertStringContainsString($endpoint, $e->getMessage());

        $e = $this->caught(static fn () => $held->refresh());
        $this->assertInstanceOf(LockAcquiringException::class, $e, 'refresh() while Redis is down');
        $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());

        $e = $this->caught(static fn () => $held->release());
        $this->assertInstanceOf(LockReleasingException::class, $e);
        $this->assertStringContainsString($endpoint, self::chainMessages($e));

        $e = $this->caught(static fn () => $held->isAcquired());
        $this->assertInstanceOf(LockStorageException::class, $e);
        $this->assertStringContainsString($endpoint, $e->getMessage());

        foreach (['save', 'saveRead', 'exists', 'delete'] as $method) {
            $key = new Key(uniqid(__METHOD__, true));
            $key->__serialize(); // a Key with a token: exists() and delete() have something to ask
            $e = $this->caught(static fn () => $store->$method($key));
            $this->assertInstanceOf(LockStorageException::class, $e, "$method() while Redis is down");
            $this->assertStringContainsString($endpoint, $e->getMessage());
        }

        $server->restart();

        $this->assertTrue($other->acquire(), 'the same Lock and store work again');
        $this->assertTrue($other->isAcquired());
        $this->assertFalse($held->isAcquired(), 'the restarted server lost the old lock');
        $this->assertTrue($held->acquire());
        $held->release();
        $other->release();
        // Only Deadbolt's companion keys remain: the fencing counters and the wake-up lists.
        $left = $server->client()->keys('*');
        $this->assertSame([], array_values(array_filter($left, static fn (string $k): bool => !str_contains($k, '#deadbolt:'))));
    }

    public function testARestartBetweenTwoCallsIsInvisible(): void
    {
        $server = $this->server();
        $lock = (new LockFactory(new RedisStore($server->dsn())))->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertTrue($lock->acquire());

        // The kept connection is dead now; the next call replaces it and runs again.
        $server->restart();

        $this->assertFalse($lock->isAcquired());
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    public function testAFrozenServerEndsInAnErrorAfterTheReadTimeoutAndTheStoreRecovers(): void
    {
        $server = $this->server();
        $lock = (new LockFactory(new RedisStore($server->dsn('?read_timeout=0.3&timeout=0.3'))))->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertTrue($lock->acquire());
        $lock->release();

        $server->pause();
        try {
            $e = $this->caught(static fn () => $lock->acquire());
        } finally {
            $server->resume();
        }

        $this->assertInstanceOf(LockAcquiringException::class, $e);
        $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $e->getPrevious()->getMessage());
        $this->assertTrue($lock->acquire(), 'works again once the server answers');
    }

    /**
     * @dataProvider lockKillers
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('lockKillers')]
    public function testALockDyingWhileRedisIsDownThrowsNothing(string $storeCode, string $how): void
    {
        $server = $this->server();
        $process = $this->spawn($storeCode.<<<'PHP'
            $factory = new Deadbolt\LockFactory($store);
            $lock = $factory->createLock('dies-while-down', 30.0);
            $kept = $factory->createLock('still-held-at-exit', 30.0);
            if (!$lock->acquire() || !$kept->acquire()) {
                exit(3);
            }
            echo "holding\n";
            fgets(STDIN); // the server is stopped now
            if ('unset' === $vars['how']) {
                unset($lock);
            } else {
                (static function () use ($factory): void {
                    $scoped = $factory->createLock('scoped', 30.0);
                })();
                $lock = null;
            }
            echo "survived\n";
            // $kept dies at shutdown, Redis still down.
            PHP, ['port' => $server->port, 'how' => $how]);
        $this->assertSame('holding', $process->readLine());

        $server->stop();
        $process->writeLine('go');

        $this->assertSame('survived', $process->readLine());
        $this->assertSame(0, $process->waitForExit(), $process->stderr());
        $this->assertSame('', $process->stderr());
    }

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function lockKillers(): iterable
    {
        $dsn = <<<'PHP'
            $store = new Deadbolt\Store\RedisStore('redis://127.0.0.1:'.$vars['port'].'?timeout=0.5&read_timeout=0.5');

            PHP;
        $phpredis = <<<'PHP'
            $redis = new \Redis();
            $redis->connect('127.0.0.1', $vars['port']);
            $store = new Deadbolt\Store\RedisStore($redis);

            PHP;
        $predis = <<<'PHP'
            require_once '/usr/share/php/Predis/autoload.php';
            $store = new Deadbolt\Store\RedisStore(new \Predis\Client(['host' => '127.0.0.1', 'port' => $vars['port']]));

            PHP;
        yield 'DSN, unset' => [$dsn, 'unset'];
        yield 'DSN, null' => [$dsn, 'null'];
        yield '\Redis, unset' => [$phpredis, 'unset'];
        yield 'Predis, unset' => [$predis, 'unset'];
    }

    /**
     * @dataProvider wrongCredentials
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('wrongCredentials')]
    public function testAWrongPasswordIsAnAcquiringErrorNamingTheServerButNotThePassword(string $userInfo): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);
        $lock = (new LockFactory(new RedisStore($server->dsn('', $userInfo))))->createLock(uniqid(__METHOD__, true), 30.0);

        $e = $this->caught(static fn () => $lock->acquire());

        $this->assertInstanceOf(LockAcquiringException::class, $e);
        $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $e->getMessage());
        $messages = self::chainMessages($e);
        $this->assertStringNotContainsString(self::PASSWORD, $messages);
        $this->assertStringNotContainsString('wrong-secret', $messages);
        $this->assertStringNotContainsString('app-user', $messages);
    }

    /**
     * Failures are told in Deadbolt's words, with what to check: redis-rs's own vocabulary ("AuthenticationFailed",
     * "os error 11" for a read timeout) never reaches a message, and a TLS DSN at a plain port says so.
     */
    public function testConnectionFailuresAreToldInOurWords(): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);
        $silent = stream_socket_server('tcp://127.0.0.1:0');
        $this->assertNotFalse($silent);
        $silentPort = (int) substr((string) strrchr((string) stream_socket_get_name($silent, false), ':'), 1);
        $cases = [
            'the server refused the credentials' => $server->dsn('', ':wrong-secret-1b2c'),
            'no answer within 0.3 s (read_timeout' => 'redis://127.0.0.1:'.$silentPort.'?read_timeout=0.3',
            'TLS handshake: check the port' => 'rediss://127.0.0.1:'.SharedRedis::port().'?read_timeout=0.3',
            'the connection was refused' => 'redis://127.0.0.1:1',
        ];
        foreach ($cases as $expected => $dsn) {
            $lock = (new LockFactory(new RedisStore($dsn)))->createLock(uniqid(__METHOD__, true), 30.0);
            $messages = self::chainMessages($this->caught(static fn () => $lock->acquire()));
            $this->assertStringContainsString($expected, $messages);
            foreach (['AuthenticationFailed', 'os error', 'ResponseError', 'temporarily unavailable'] as $theirs) {
                $this->assertStringNotContainsString($theirs, $messages);
            }
        }
        fclose($silent);
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function wrongCredentials(): iterable
    {
        yield 'no password' => [''];
        yield 'wrong password' => [':wrong-secret-1b2c'];
        yield 'wrong user and password' => ['app-user:wrong-secret-1b2c'];
    }

    public function testTheRightPasswordInTheDsnWorks(): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);

        foreach ([':'.self::PASSWORD, 'default:'.self::PASSWORD] as $userInfo) {
            $lock = (new LockFactory(new RedisStore($server->dsn('', $userInfo))))->createLock(uniqid(__METHOD__, true), 30.0);
            $this->assertTrue($lock->acquire(), 'user info '.('' === strstr($userInfo, ':', true) ? 'without' : 'with').' user name');
            $lock->release();
        }
    }

    public function testThePasswordFromPasswordEnvWorks(): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);
        putenv(self::PASSWORD_ENV.'='.self::PASSWORD);

        $lock = (new LockFactory(new RedisStore($server->dsn('?password_env='.self::PASSWORD_ENV))))->createLock(uniqid(__METHOD__, true), 30.0);

        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $lock->release();
    }

    public function testAWrongPasswordFromPasswordEnvIsAnAcquiringErrorWithoutThePassword(): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);
        putenv(self::PASSWORD_ENV.'=wrong-secret-from-env');
        $lock = (new LockFactory(new RedisStore($server->dsn('?password_env='.self::PASSWORD_ENV))))->createLock(uniqid(__METHOD__, true), 30.0);

        $e = $this->caught(static fn () => $lock->acquire());

        $this->assertInstanceOf(LockAcquiringException::class, $e);
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $e->getMessage());
        $this->assertStringNotContainsString('wrong-secret-from-env', self::chainMessages($e));
    }

    /**
     * A wait with a deadline bounds every socket wait by it: against a server that accepts and never answers (a
     * listener that never reads), acquire(true, 0.5) ends in a LockAcquiringException although each command could
     * wait 60 s (read_timeout=60). The child is killed, and the test fails, if it does not end by itself.
     */
    public function testADeadlineBoundsTheWaitForAServerThatNeverAnswers(): void
    {
        $silent = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        $this->assertNotFalse($silent, $error);
        $port = (int) substr((string) strrchr((string) stream_socket_get_name($silent, false), ':'), 1);
        $result = PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock('silent', 5.0);
            try {
                var_export($lock->acquire(true, 0.5));
            } catch (Deadbolt\Exception\LockAcquiringException $e) {
                echo 'failed';
            }
            PHP, ['dsn' => "redis://127.0.0.1:$port?timeout=60&read_timeout=60"], true, 30.0);
        fclose($silent);
        $this->assertSame(0, $result['exit'], "the wait did not end by itself\n".$result['stderr']);
        $this->assertSame('failed', $result['stdout']);
    }

    /**
     * A server paused for writes (CLIENT PAUSE ... WRITE, as during a failover) does not answer a lock script until
     * the pause ends: a wait with a deadline longer than the pause rides it out and takes the lock, instead of
     * failing after a read timeout or two.
     */
    public function testAWaitRidesOutAPausedServer(): void
    {
        $server = $this->server();
        $lock = (new LockFactory(new RedisStore($server->dsn('?read_timeout=0.3'))))->createLock(uniqid(__METHOD__, true), 30.0);
        $server->client()->rawCommand('CLIENT', 'PAUSE', '1500', 'WRITE');

        $this->assertTrue($lock->acquire(true, 20.0), 'acquired once the pause ended');
        $this->assertTrue($lock->isAcquired());
        $lock->release();
    }

    /**
     * Connections are keyed by what they are, not by the DSN text: after the password_env variable changed, a new store
     * with the same DSN text connects with the new password (a wrong one fails) instead of reusing the connection
     * made with the old one.
     */
    public function testAChangedPasswordEnvIsANewConnection(): void
    {
        $server = $this->server(['requirepass' => self::PASSWORD]);
        $dsn = $server->dsn('?password_env='.self::PASSWORD_ENV);
        putenv(self::PASSWORD_ENV.'='.self::PASSWORD);
        $first = new RedisStore($dsn);
        $key = new Key(uniqid(__METHOD__, true));
        $first->save($key);
        $this->assertTrue($first->exists($key), 'connected with the right password');

        putenv(self::PASSWORD_ENV.'=wrong-secret-from-env');
        $second = new RedisStore($dsn);
        $e = $this->caught(static fn () => $second->save(new Key(uniqid(__METHOD__, true))));
        $this->assertInstanceOf(LockStorageException::class, $e, 'the wrong password is used, and refused');
        $this->assertTrue($first->exists($key), 'the first store keeps its connection');
        $first->delete($key);
    }

    /**
     * Native connections live as long as a store uses them, plus a few idle ones: a long-lived process that makes many
     * stores with distinct DSNs does not keep a connection (and a descriptor) for each.
     */
    public function testConnectionsNoStoreUsesAreClosed(): void
    {
        $server = $this->server();
        $result = PhpProcess::run(<<<'PHP'
            for ($i = 1; $i <= 200; ++$i) {
                $store = new Deadbolt\Store\RedisStore($vars['dsn'].'?read_timeout='.(1 + $i / 1000));
                $store->save(new Deadbolt\Key('r'.$i));
                unset($store);
            }
            $redis = new Redis();
            $redis->connect('127.0.0.1', $vars['port']);
            echo \count($redis->client('list')) - 1;
            PHP, ['dsn' => $server->dsn(), 'port' => $server->port]);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertLessThanOrEqual(10, (int) $result['stdout'], 'connections left open by 200 short-lived stores');
    }

    public function testAHashTypedKeyIsAStorageErrorNamingTheType(): void
    {
        $resource = uniqid(__METHOD__, true);
        SharedRedis::client()->hSet($resource, 'owner', 'someone');
        $store = new RedisStore(SharedRedis::dsn());

        $e = $this->caught(static fn () => $store->save(new Key($resource)));

        $this->assertInstanceOf(LockStorageException::class, $e);
        $this->assertStringContainsString('hash', $e->getMessage());
        $this->assertSame(['owner' => 'someone'], SharedRedis::client()->hGetAll($resource));
    }

    /**
     * @dataProvider evictingPolicies
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('evictingPolicies')]
    public function testAnEvictingServerIsReportedOnceToTheLoggerAndToTheErrorLog(string $policy): void
    {
        $server = $this->server(['maxmemory-policy' => $policy]);
        $errorLog = $this->tempDir().'/php-error.log';

        $result = $this->runLoggingChild($server->dsn(), $errorLog);

        $warnings = array_values(array_filter($result['records'], static fn (array $r): bool => 'warning' === $r[0]));
        $this->assertCount(1, $warnings, 'one warning across two acquires: '.json_encode($result['records']));
        $this->assertStringContainsString($policy, $warnings[0][1]);
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $warnings[0][1]);
        $logged = array_values(array_filter(explode("\n", (string) @file_get_contents($errorLog)), static fn (string $l): bool => str_contains($l, 'maxmemory-policy')));
        $this->assertCount(1, $logged, 'one line in PHP\'s error_log: '.@file_get_contents($errorLog));
        $this->assertStringContainsString($policy, $logged[0]);
        $this->assertSame(2, \count(array_filter($result['records'], static fn (array $r): bool => 'Successfully acquired the "{resource}" lock.' === $r[1])), 'both acquires went through');
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function evictingPolicies(): iterable
    {
        yield 'allkeys-lru' => ['allkeys-lru'];
        yield 'volatile-ttl' => ['volatile-ttl'];
    }

    public function testANoevictionServerIsNotReported(): void
    {
        $server = $this->server(['maxmemory-policy' => 'noeviction']);
        $errorLog = $this->tempDir().'/php-error.log';

        $result = $this->runLoggingChild($server->dsn(), $errorLog);

        $this->assertSame([], array_values(array_filter($result['records'], static fn (array $r): bool => 'warning' === $r[0])));
        $this->assertSame('', (string) @file_get_contents($errorLog));
    }

    public function testAServerThatRefusesConfigIsNotReported(): void
    {
        $server = $this->server(['maxmemory-policy' => 'allkeys-lru']);
        $admin = $server->client();
        // As on managed services: CONFIG is refused (NOPERM) to the user the application connects as.
        $this->assertTrue($admin->rawCommand('ACL', 'SETUSER', 'default', '-config'));
        $admin->close();
        $errorLog = $this->tempDir().'/php-error.log';

        $result = $this->runLoggingChild($server->dsn(), $errorLog);

        $this->assertSame([], array_values(array_filter($result['records'], static fn (array $r): bool => 'warning' === $r[0])));
        $this->assertSame('', (string) @file_get_contents($errorLog));
    }

    /**
     * Two acquires through a Lock with a logger in a fresh php process (its first connection), PHP's error_log
     * pointed at $errorLog.
     *
     * @return array{records: list<array{0: string, 1: string}>}
     */
    private function runLoggingChild(string $dsn, string $errorLog): array
    {
        $result = PhpProcess::run(<<<'PHP'
            $logger = new class() {
                public array $records = [];
                public function log($level, $message, array $context = []): void
                {
                    $this->records[] = [(string) $level, (string) $message];
                }
            };
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
            $factory->setLogger($logger);
            $first = $factory->createLock('first', 30.0);
            $second = $factory->createLock('second', 30.0);
            if (!$first->acquire() || !$second->acquire()) {
                exit(3);
            }
            $first->release();
            $second->release();
            echo json_encode(['records' => $logger->records]);
            PHP, ['dsn' => $dsn], true, 60.0, array_merge(deadbolt_php_command(), ['-d', 'error_log='.$errorLog]));
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame('', $result['stderr']);

        return json_decode($result['stdout'], true, 512, JSON_THROW_ON_ERROR);
    }

    /**
     * @param array<string, string> $options
     */
    private function server(array $options = []): RedisServer
    {
        return $this->servers[] = RedisServer::start($options);
    }

    private function caught(callable $operation): \Throwable
    {
        try {
            $operation();
        } catch (\Throwable $e) {
            return $e;
        }
        $this->fail('The operation did not throw.');
    }

    private static function chainMessages(\Throwable $e): string
    {
        $messages = [];
        for (; null !== $e; $e = $e->getPrevious()) {
            $messages[] = \get_class($e).': '.$e->getMessage();
        }

        return implode("\n", $messages);
    }
}
