<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Security;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\ProtectedRedisFixture;

/**
 * Neither the Redis password nor any lock token may show in what Deadbolt lets out. Each test runs a fresh php
 * process against a password-protected private redis-server (ProtectedRedisFixture), through every failure path,
 * with the password in the DSN and from password_env, and looks for the secrets afterwards: once in what the child
 * captured of Deadbolt's messages, records and dumps (the in-process view), once in everything the process wrote to
 * stdout, stderr, its error_log and its logger file (the whole-process view).
 */
final class SecretsNeverLeakTest extends DeadboltTestCase
{
    use ProtectedRedisFixture;

    /** Needs percent-encoding in a DSN: both forms are looked for. */
    private const PASSWORD = 'S3cr3t@pw:7f1e9d/x';
    private const WRONG_PASSWORD = 'Wr0ng@pw:2b4c6d/y';
    private const USER = 'locker';
    private const PASSWORD_ENV = 'DEADBOLT_TEST_LEAK_PASSWORD';

    /**
     * var_dump() and print_r() of Deadbolt objects show their safe state (resource, held or not, TTL, time left, the
     * store's kind and redacted endpoint), never the owner token or the DSN's user and password.
     */
    public function testDebugViewsShowTheSafeStateOnly(): void
    {
        $password = 'Dump-Pw-'.bin2hex(random_bytes(4));
        $store = new \Deadbolt\Store\RedisStore('redis://app:'.$password.'@127.0.0.1:1/3');
        $factory = new \Deadbolt\LockFactory(new \Deadbolt\Store\InMemoryStore());
        $key = new \Deadbolt\Key('dumped-resource');
        $lock = $factory->createLockFromKey($key, 30.0);
        $this->assertTrue($lock->acquire());
        $token = $key->__serialize()['token'];

        ob_start();
        var_dump($store, $factory, $key, $lock);
        print_r($lock);
        print_r($store);
        $shown = (string) ob_get_clean();

        $this->assertStringContainsString('RedisStore(redis://127.0.0.1:1/3)', $shown);
        $this->assertStringContainsString('dumped-resource', $shown);
        $this->assertStringContainsString('["held"]=>'."\n".'  bool(true)', $shown);
        $this->assertStringContainsString('["ttl"]=>'."\n".'  float(30)', $shown);
        $this->assertStringNotContainsString($password, $shown);
        $this->assertStringNotContainsString('app', str_replace(['dumped-resource'], '', $shown));
        $this->assertStringNotContainsString($token, $shown);
        $lock->release();
    }

    /**
     * The parameters that carry a DSN or a client are #[\SensitiveParameter] (as symfony/lock's and PDO's are): with
     * zend.exception_ignore_args=0 (PHP's development default), an exception thrown by the call shows a
     * SensitiveParameterValue in its trace, never the DSN and its password.
     */
    public function testTracesNeverShowADsnArgument(): void
    {
        $previous = ini_set('zend.exception_ignore_args', '0');
        try {
            $password = 'Tr4ce-Pw-'.bin2hex(random_bytes(4));
            $dsn = "redis://app:$password@127.0.0.1:not-a-port";
            $calls = [
                'RedisStore::__construct' => static fn () => new \Deadbolt\Store\RedisStore($dsn),
                'StoreFactory::createStore' => static fn () => \Deadbolt\Store\StoreFactory::createStore($dsn),
            ];
            foreach ($calls as $name => $call) {
                try {
                    $call();
                    $this->fail("$name accepted a malformed DSN");
                } catch (\Deadbolt\Exception\InvalidArgumentException $e) {
                    $this->assertInstanceOf(\SensitiveParameterValue::class, $e->getTrace()[0]['args'][0] ?? null, $name);
                    // The frames of the call and of the closure that made it: further up, the arguments are
                    // PHPUnit's own objects, whose whole graph print_r() would render (gigabytes).
                    $shown = print_r(\array_slice($e->getTrace(), 0, 2), true).$e->getTraceAsString().$e;
                    $this->assertStringNotContainsString($password, $shown, $name);
                }
            }
        } finally {
            ini_set('zend.exception_ignore_args', (string) $previous);
        }
    }

    /**
     * The in-process view: what Deadbolt hands the application, captured inside the child. Exception messages (whole
     * previous chain), logger records (message and context, rendered with var_export), var_dump/print_r/var_export of
     * its objects, phpinfo(). The child goes through every failure path (wrong password, server down, bad DSN
     * options, a key of the wrong type) and hands back what it captured and the tokens of its keys; this test looks
     * for the secrets in it.
     *
     * @dataProvider passwordSources
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('passwordSources')]
    public function testNeitherThePasswordNorATokenShowsAnywhere(string $source): void
    {
        $server = $this->startProtectedServer();

        $process = PhpProcess::start(self::IN_PROCESS_CHILD, $this->childVars($server, $source), true, array_merge(deadbolt_php_command(), ['-d', 'zend.exception_ignore_args=0', '-d', 'error_log=/dev/null']));
        try {
            $this->assertSame('stop the server', $process->readLine(), $process->stderr());
            $server->stop();
            $process->writeLine('stopped');
            $this->assertSame('restart the server', $process->readLine(), $process->stderr());
            $server->restart();
            $this->prepareProtectedServer($server);
            $process->writeLine('restarted');
            $exit = $process->waitForExit();
        } finally {
            $process->kill();
            $server->stop();
        }
        $this->assertSame(0, $exit, $process->stderr());
        $this->assertSame('', $process->stderr());
        $captured = json_decode((string) base64_decode($process->stdout(), true), true, 512, JSON_THROW_ON_ERROR);

        $this->assertGreaterThanOrEqual(4, \count($captured['tokens']), 'the child reports the tokens of its keys');
        foreach ($captured['texts'] as $label => $text) {
            if (str_starts_with($label, 'message: ')) {
                // Every failure path did fail (else the search below proves nothing), and the control did not.
                $this->assertSame('message: acquire after restart' === $label, '(no exception)' === $text, "$label: $text");
            }
        }
        $this->assertGreaterThan(20, \count($captured['texts']), 'the child captured every output');
        $this->assertNotEmpty(array_filter($captured['texts'], static fn (string $label): bool => str_starts_with($label, 'log '), ARRAY_FILTER_USE_KEY), 'logger records were captured');
        $secrets = self::passwords();
        foreach ($captured['tokens'] as $i => $token) {
            $secrets["token $i"] = $token;
        }
        $leaks = [];
        foreach ($captured['texts'] as $label => $text) {
            foreach ($secrets as $name => $secret) {
                if (str_contains($text, $secret)) {
                    $leaks[] = "$label shows $name";
                }
            }
        }
        $this->assertSame([], $leaks, "Secrets leaked:\n".implode("\n", $leaks));
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $captured['texts']['message: acquire, wrong password'] ?? '', 'the failures do name the server');
    }

    /**
     * The whole-process view: nothing the php process lets out shows a secret. The child runs every failure path
     * (wrong password in the DSN and through password_env, unknown user, unset password_env, server down, bad DSN
     * options that carry the password, a \Redis object without AUTH, the eviction warning of allkeys-lru), with a
     * PSR-3 logger writing full records (exceptions rendered with __toString(), traces included) to a file, error_log
     * to a file with log_errors=1, display_errors=stderr, echoes every exception chain, var_dump/print_r/json_encode of
     * its objects and phpinfo() without the environment sections, and ends with an uncaught LockAcquiringException (a
     * PHP fatal error). Its tokens go to a side file that is not searched. stdout, stderr, the error_log file and the
     * logger file must not contain the password (plain or percent-encoded), the wrong password, or any token.
     *
     * @dataProvider passwordSources
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('passwordSources')]
    public function testNoSecretInAnyOutputOfTheProcess(string $source): void
    {
        $server = $this->startProtectedServer(['maxmemory-policy' => 'allkeys-lru']);
        $dir = $this->tempDir();
        $files = ['error_log' => $dir.'/php-error.log', 'logger' => $dir.'/logger.log', 'tokens' => $dir.'/tokens.json'];

        $command = array_merge(deadbolt_php_command(), [
            '-d', 'display_errors=stderr', '-d', 'log_errors=1', '-d', 'error_log='.$files['error_log'],
            '-d', 'html_errors=0', '-d', 'zend.exception_ignore_args=0',
        ]);
        $consumed = ''; // the lines read to sync with the child: part of its stdout
        $process = PhpProcess::start(self::WHOLE_PROCESS_CHILD, $this->childVars($server, $source) + ['files' => $files], true, $command);
        try {
            $consumed .= self::readUntil($process, 'stop the server');
            $server->stop();
            $process->writeLine('stopped');
            $consumed .= self::readUntil($process, 'restart the server');
            $server->restart();
            $this->prepareProtectedServer($server);
            $process->writeLine('restarted');
            $exit = $process->waitForExit();
        } finally {
            $process->kill();
            $server->stop();
        }

        $stdout = $consumed.$process->stdout();
        $stderr = $process->stderr();
        $outputs = [
            'stdout' => $stdout,
            'stderr' => $stderr,
            'error_log file' => (string) @file_get_contents($files['error_log']),
            'logger file' => (string) @file_get_contents($files['logger']),
        ];
        // The child did go through its paths (else the search proves nothing).
        $this->assertSame(255, $exit, "the child ends with the uncaught exception (a fatal error)\nstdout tail: ".substr($stdout, -2000)."\nstderr: $stderr");
        // PHP renders the chain innermost first: the LockStorageException, then "Next" the LockAcquiringException.
        foreach (['error_log file' => $outputs['error_log file'], 'stderr' => $stderr] as $where => $text) {
            $this->assertStringContainsString('Fatal error:  Uncaught Deadbolt\Exception\LockStorageException', str_replace('Fatal error: Uncaught', 'Fatal error:  Uncaught', $text), $where);
            $this->assertStringContainsString('Next Deadbolt\Exception\LockAcquiringException', $text, $where);
        }
        $this->assertStringContainsString('== all paths done', $stdout);
        $this->assertStringContainsString('phpinfo: deadbolt', $stdout, 'phpinfo() was printed, with the deadbolt section');
        $this->assertStringContainsString('127.0.0.1:'.$server->port, $outputs['logger file'], 'the logger got the failure records');
        $this->assertGreaterThan(30, substr_count($stdout, "\n== "), 'the child printed every path');
        $tokens = json_decode((string) file_get_contents($files['tokens']), true, 512, JSON_THROW_ON_ERROR);
        $this->assertGreaterThanOrEqual(6, \count($tokens));

        $secrets = self::passwords();
        foreach ($tokens as $label => $token) {
            $secrets["token of $label"] = $token;
        }
        $leaks = [];
        foreach ($outputs as $where => $text) {
            foreach ($secrets as $name => $secret) {
                $at = strpos($text, $secret);
                if (false !== $at) {
                    $leaks[] = sprintf('%s shows %s: ...%s...', $where, $name, substr($text, max(0, $at - 300), 300 + \strlen($secret) + 100));
                }
            }
        }
        $this->assertSame([], $leaks, "Secrets leaked:\n".implode("\n\n", $leaks));
    }

    /**
     * Reads the child's lines up to $marker; returns them, the marker line included.
     */
    private static function readUntil(PhpProcess $process, string $marker): string
    {
        $lines = '';
        do {
            $line = $process->readLine(120.0);
            $lines .= $line."\n";
        } while ($line !== $marker);

        return $lines;
    }

    /**
     * The passwords as a leak would show them: plain and percent-encoded, the right one and the wrong one.
     *
     * @return array<string, string>
     */
    private static function passwords(): array
    {
        return [
            'the password' => self::PASSWORD,
            'the encoded password' => rawurlencode(self::PASSWORD),
            'the wrong password' => self::WRONG_PASSWORD,
            'the encoded wrong password' => rawurlencode(self::WRONG_PASSWORD),
        ];
    }

    private const IN_PROCESS_CHILD = <<<'PHP'
        use Deadbolt\Key;
        use Deadbolt\LockFactory;
        use Deadbolt\Store\RedisStore;
        use Deadbolt\Store\StoreFactory;

        $texts = [];
        $tokens = [];
        $host = '127.0.0.1:'.$vars['port'];
        $user = rawurlencode($vars['user']);
        if ('env' === $vars['source']) {
            putenv($vars['env'].'='.$vars['password']);
            $dsn = "redis://$user@$host?password_env=".$vars['env'];
            $wrongEnv = $vars['env'].'_WRONG';
            putenv($wrongEnv.'='.$vars['wrong']);
            $wrongDsn = "redis://$user@$host?password_env=".$wrongEnv;
        } else {
            $dsn = "redis://$user:".rawurlencode($vars['password'])."@$host";
            $wrongDsn = "redis://$user:".rawurlencode($vars['wrong'])."@$host";
        }

        $logger = new class() {
            public int $count = 0;
            public array $texts = [];
            public function log($level, $message, array $context = []): void
            {
                $this->texts['log '.(++$this->count).' '.$level] = $message."\n".var_export($context, true);
            }
        };
        $messages = static function (Throwable $e): string {
            $out = '';
            for (; null !== $e; $e = $e->getPrevious()) {
                $out .= get_class($e).': '.$e->getMessage()."\n";
            }
            return $out;
        };
        $attempt = static function (string $label, callable $operation) use (&$texts, $messages): void {
            try {
                $operation();
                $texts["message: $label"] = '(no exception)';
            } catch (Throwable $e) {
                $texts["message: $label"] = $messages($e);
            }
        };
        $dump = static function (string $label, $value) use (&$texts): void {
            ob_start();
            var_dump($value);
            $texts["var_dump $label"] = (string) ob_get_clean();
            $texts["print_r $label"] = print_r($value, true);
            $texts["var_export $label"] = var_export($value, true);
            $texts["(array) $label"] = var_export((array) $value, true);
            $texts["json_encode $label"] = (string) json_encode($value);
            ob_start();
            debug_zval_dump($value);
            $texts["debug_zval_dump $label"] = (string) ob_get_clean();
        };
        $token = static function (Key $key) use (&$tokens): void {
            $tokens[] = $key->__serialize()['token'];
        };

        // A working store, with locks held.
        $store = new RedisStore($dsn);
        $factory = new LockFactory($store);
        $factory->setLogger($logger);
        $heldKey = new Key('held');
        $held = $factory->createLockFromKey($heldKey, 30.0);
        $held->acquire() || exit(3);
        $held->refresh();
        $readerKey = new Key('read');
        $reader = $factory->createLockFromKey($readerKey, 30.0);
        $reader->acquireRead() || exit(4);
        $loserKey = new Key('held');
        $loser = $factory->createLockFromKey($loserKey, 30.0);
        $loser->acquire(false) && exit(5); // conflict: an info record
        $attempt('refresh by the loser', static fn () => $loser->refresh());
        $token($heldKey);
        $token($readerKey);
        $token($loserKey);
        $fromFactory = StoreFactory::createStore($dsn);
        $dump('store', $store);
        $dump('StoreFactory store', $fromFactory);
        $dump('factory', $factory);
        $dump('lock', $held);
        $dump('key', $heldKey);
        $dump('reader lock', $reader);

        // A key of another type.
        $hashKey = new Key('typed-as-hash');
        $hashLock = $factory->createLockFromKey($hashKey, 30.0);
        $attempt('acquire, hash key', static fn () => $hashLock->acquire());
        $attempt('acquireRead, hash key', static fn () => $hashLock->acquireRead());
        $attempt('save, hash key', static fn () => $store->save($hashKey));
        $token($hashKey);

        // The wrong password.
        $wrongStore = new RedisStore($wrongDsn);
        $wrongFactory = new LockFactory($wrongStore);
        $wrongFactory->setLogger($logger);
        $wrongKey = new Key('wrong');
        $wrongLock = $wrongFactory->createLockFromKey($wrongKey, 30.0);
        $attempt('acquire, wrong password', static fn () => $wrongLock->acquire());
        $attempt('acquireRead, wrong password', static fn () => $wrongLock->acquireRead());
        $attempt('isAcquired, wrong password', static fn () => $wrongLock->isAcquired());
        $attempt('refresh, wrong password', static fn () => $wrongLock->refresh());
        $attempt('exists, wrong password', static fn () => $wrongStore->exists($wrongKey));
        $token($wrongKey);
        $dump('store, wrong password', $wrongStore);
        $dump('lock, wrong password', $wrongLock);

        // Bad DSNs that carry the password.
        $secretPart = 'env' === $vars['source'] ? "$user@$host?password_env=".$vars['env'].'&' : "$user:".rawurlencode($vars['password'])."@$host?";
        $wrongPart = "$user:".rawurlencode($vars['wrong'])."@$host?";
        foreach ([
            'unknown option' => "redis://{$secretPart}bogus=1",
            'bad timeout' => "redis://{$secretPart}timeout=soon",
            'bad read_timeout' => "redis://{$secretPart}read_timeout=-1",
            'bad db' => "redis://{$secretPart}db=first",
            'ca_file without TLS' => "redis://{$secretPart}ca_file=/nonexistent.pem",
            'missing ca_file' => "rediss://{$secretPart}ca_file=/nonexistent.pem",
            'wrong password, unknown option' => "redis://{$wrongPart}bogus=1",
            'bad database path' => 'redis://'.$user.':'.rawurlencode($vars['password'])."@$host/first",
            'bad port' => 'redis://'.$user.':'.rawurlencode($vars['password']).'@127.0.0.1:99999',
            'unset password_env' => "redis://$user@$host?password_env=".$vars['env'].'_NEVER_SET',
            'other scheme' => 'memcached://'.$user.':'.rawurlencode($vars['password'])."@$host",
            'password unencoded' => 'redis://'.$user.':'.$vars['password']."@$host",
        ] as $label => $bad) {
            $attempt("new RedisStore, $label", static fn () => new RedisStore($bad));
            $attempt("StoreFactory, $label", static fn () => StoreFactory::createStore($bad));
        }

        // Redis down.
        echo "stop the server\n";
        fgets(STDIN);
        $downKey = new Key('down');
        $down = $factory->createLockFromKey($downKey, 30.0);
        $attempt('acquire, server down', static fn () => $down->acquire());
        $attempt('acquireRead, server down', static fn () => $down->acquireRead());
        $attempt('refresh, server down', static fn () => $held->refresh());
        $attempt('isAcquired, server down', static fn () => $held->isAcquired());
        $attempt('release, server down', static fn () => $held->release());
        $attempt('reader release, server down', static fn () => $reader->release());
        $attempt('save, server down', static fn () => $store->save($downKey));
        $attempt('delete, server down', static fn () => $store->delete($heldKey));
        $attempt('exists, server down', static fn () => $store->exists($heldKey));
        $token($downKey);
        $dump('store, server down', $store);
        $dump('lock, server down', $held);
        $dump('key, server down', $downKey);

        echo "restart the server\n";
        fgets(STDIN);
        $again = $factory->createLockFromKey(new Key('again'), 30.0);
        $attempt('acquire after restart', static fn () => $again->acquire() || throw new RuntimeException('not acquired'));

        ob_start();
        phpinfo(INFO_ALL & ~INFO_ENVIRONMENT & ~INFO_VARIABLES);
        $texts['phpinfo'] = (string) ob_get_clean();

        echo base64_encode(json_encode(['texts' => $texts + $logger->texts, 'tokens' => $tokens], JSON_THROW_ON_ERROR | JSON_INVALID_UTF8_SUBSTITUTE));
        PHP;

    private const WHOLE_PROCESS_CHILD = <<<'PHP'
        use Deadbolt\Key;
        use Deadbolt\LockFactory;
        use Deadbolt\Store\RedisStore;
        use Deadbolt\Store\StoreFactory;

        $tokens = [];
        $host = '127.0.0.1:'.$vars['port'];
        $user = rawurlencode($vars['user']);
        if ('env' === $vars['source']) {
            putenv($vars['env'].'='.$vars['password']);
            $dsn = "redis://$user@$host?password_env=".$vars['env'];
            putenv($vars['env'].'_WRONG='.$vars['wrong']);
            $wrongDsn = "redis://$user@$host?password_env=".$vars['env'].'_WRONG';
        } else {
            $dsn = "redis://$user:".rawurlencode($vars['password'])."@$host";
            $wrongDsn = "redis://$user:".rawurlencode($vars['wrong'])."@$host";
        }
        $loggerFile = $vars['files']['logger'];
        $logger = new class($loggerFile) {
            public function __construct(private string $file) {}
            public function log($level, $message, array $context = []): void
            {
                $text = "[$level] $message\n";
                foreach ($context as $k => $v) {
                    $text .= "  $k: ".($v instanceof Throwable ? (string) $v : var_export($v, true))."\n";
                }
                file_put_contents($this->file, $text, FILE_APPEND);
            }
        };
        $show = static function (string $label, callable $operation): void {
            echo "== $label\n";
            try {
                $result = $operation();
                echo 'result: ', var_export($result, true), "\n";
            } catch (Throwable $e) {
                // Everything an application typically prints: the exception as a string (chain and trace).
                echo (string) $e, "\n";
                for ($p = $e; null !== $p; $p = $p->getPrevious()) {
                    echo get_class($p), ': ', $p->getMessage(), "\n";
                    error_log('caught '.get_class($p).': '.$p->getMessage());
                }
            }
        };
        $dump = static function (string $label, $value): void {
            echo "== dump $label\n";
            var_dump($value);
            print_r($value);
            echo "\n", var_export($value, true), "\n", json_encode($value), "\n";
            debug_zval_dump($value);
        };
        $token = static function (string $label, Key $key) use (&$tokens, $vars): void {
            $tokens[$label] = $key->__serialize()['token'];
            file_put_contents($vars['files']['tokens'], json_encode($tokens));
        };

        // Working locks (the first connection also warns about allkeys-lru, to error_log and the logger).
        $store = new RedisStore($dsn);
        $factory = new LockFactory($store);
        $factory->setLogger($logger);
        $heldKey = new Key('held');
        $held = $factory->createLockFromKey($heldKey, 30.0);
        $show('acquire', static fn () => $held->acquire());
        $show('refresh', static fn () => $held->refresh());
        $readerKey = new Key('read');
        $reader = $factory->createLockFromKey($readerKey, 30.0);
        $show('acquireRead', static fn () => $reader->acquireRead());
        $loserKey = new Key('held');
        $loser = $factory->createLockFromKey($loserKey, 30.0);
        $show('conflict', static fn () => $loser->acquire(false));
        $show('refresh by the loser', static fn () => $loser->refresh());
        $show('release by the loser', static fn () => $loser->release());
        $token('held', $heldKey);
        $token('reader', $readerKey);
        $token('loser', $loserKey);
        $fromFactory = StoreFactory::createStore($dsn);
        $dump('store', $store);
        $dump('StoreFactory store', $fromFactory);
        $dump('factory', $factory);
        $dump('lock', $held);
        $dump('key', $heldKey);
        $serialized = serialize($heldKey); // made, never printed: the token is in it
        $show('fencing', static fn () => $held->getFencingToken());
        $show('metrics', static fn () => Deadbolt\Metrics::prometheus());

        // A key of another type.
        $hashKey = new Key('typed-as-hash');
        $hashLock = $factory->createLockFromKey($hashKey, 30.0);
        $show('acquire, hash key', static fn () => $hashLock->acquire());
        $show('save, hash key', static fn () => $store->save($hashKey));
        $token('hash', $hashKey);

        // Wrong password, unknown user, unset password_env.
        foreach ([
            'wrong password' => $wrongDsn,
            'unknown user' => 'redis://nobody:'.rawurlencode($vars['password'])."@$host",
            'unset password_env' => "redis://$user@$host?password_env=".$vars['env'].'_NEVER_SET',
            'no credentials' => "redis://$host",
        ] as $label => $badDsn) {
            try {
                $badStore = new RedisStore($badDsn);
            } catch (Deadbolt\Exception\InvalidArgumentException $e) {
                $show("new RedisStore, $label", static fn () => throw $e);
                continue;
            }
            $badFactory = new LockFactory($badStore);
            $badFactory->setLogger($logger);
            $badKey = new Key("bad $label");
            $badLock = $badFactory->createLockFromKey($badKey, 30.0);
            $show("acquire, $label", static fn () => $badLock->acquire());
            $show("acquireRead, $label", static fn () => $badLock->acquireRead());
            $show("refresh, $label", static fn () => $badLock->refresh());
            $show("isAcquired, $label", static fn () => $badLock->isAcquired());
            $show("exists, $label", static fn () => $badStore->exists($badKey));
            $show("release, $label", static fn () => $badLock->release());
            $token("bad $label", $badKey);
            $dump("store, $label", $badStore);
        }

        // A \Redis object that never authenticated.
        $client = new Redis();
        $client->connect('127.0.0.1', $vars['port']);
        $clientFactory = new LockFactory(new RedisStore($client));
        $clientFactory->setLogger($logger);
        $clientKey = new Key('client');
        $clientLock = $clientFactory->createLockFromKey($clientKey, 30.0);
        $show('acquire, \Redis without AUTH', static fn () => $clientLock->acquire());
        $token('client', $clientKey);

        // Bad DSNs that carry the password.
        $secretPart = 'env' === $vars['source'] ? "$user@$host?password_env=".$vars['env'].'&' : "$user:".rawurlencode($vars['password'])."@$host?";
        foreach ([
            'unknown option' => "redis://{$secretPart}bogus=1",
            'bad timeout' => "redis://{$secretPart}timeout=soon",
            'bad read_timeout' => "redis://{$secretPart}read_timeout=-1",
            'bad db' => "redis://{$secretPart}db=first",
            'ca_file without TLS' => "redis://{$secretPart}ca_file=/nonexistent.pem",
            'missing ca_file' => "rediss://{$secretPart}ca_file=/nonexistent.pem",
            'bad database path' => "redis://$user:".rawurlencode($vars['password'])."@$host/first",
            'bad port' => "redis://$user:".rawurlencode($vars['password']).'@127.0.0.1:99999',
            'other scheme' => "memcached://$user:".rawurlencode($vars['password'])."@$host",
            'password unencoded' => "redis://$user:".$vars['password']."@$host",
            'password as the option' => "redis://$host?password=".rawurlencode($vars['password']),
        ] as $label => $bad) {
            $show("new RedisStore, $label", static fn () => new RedisStore($bad));
            $show("StoreFactory, $label", static fn () => StoreFactory::createStore($bad));
        }

        // Redis down.
        echo "stop the server\n";
        fgets(STDIN);
        $downKey = new Key('down');
        $down = $factory->createLockFromKey($downKey, 30.0);
        $show('acquire, server down', static fn () => $down->acquire());
        $show('acquire blocking with timeout, server down', static fn () => $down->acquire(true, 0.3));
        $show('refresh, server down', static fn () => $held->refresh());
        $show('isAcquired, server down', static fn () => $held->isAcquired());
        $show('release, server down', static fn () => $reader->release());
        $show('save, server down', static fn () => $store->save($downKey));
        $show('delete, server down', static fn () => $store->delete($heldKey));
        $show('fencing, server down', static fn () => $held->getFencingToken());
        $token('down', $downKey);
        $dump('lock, server down', $held);

        echo "restart the server\n";
        fgets(STDIN);
        $againKey = new Key('again');
        $again = $factory->createLockFromKey($againKey, 30.0);
        $show('acquire after restart', static fn () => $again->acquire());
        $token('again', $againKey);

        ob_start();
        phpinfo(INFO_ALL & ~INFO_ENVIRONMENT & ~INFO_VARIABLES);
        $info = (string) ob_get_clean();
        echo "== phpinfo\n", $info, "\n";
        echo str_contains($info, 'deadbolt') ? "phpinfo: deadbolt\n" : "phpinfo: no deadbolt section\n";
        echo "== all paths done\n";

        // Uncaught: the fatal error goes to stderr (display_errors) and to the error_log file (log_errors), with the
        // trace. The locks still held are released (or fail to) at shutdown.
        $wrongLock = (new LockFactory(new RedisStore($wrongDsn)))->createLockFromKey($lastKey = new Key('uncaught'), 30.0);
        $token('uncaught', $lastKey);
        $wrongLock->acquire();
        PHP;
}
