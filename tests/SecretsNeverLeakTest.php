<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\ProtectedRedisFixture;

/**
 * Neither the Redis password nor any lock token may show in what Deadbolt lets out: exception messages (whole
 * previous chain), logger records (message and context, rendered with var_export), var_dump/print_r/var_export of
 * its objects, phpinfo().
 *
 * Everything runs in a fresh php process against a password-protected private redis-server, through every failure
 * path: wrong password, server down, bad DSN options, a key of the wrong type. The process hands back what it
 * captured and the tokens of its keys; this test looks for the secrets in it.
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
     * @dataProvider passwordSources
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('passwordSources')]
    public function testNeitherThePasswordNorATokenShowsAnywhere(string $source): void
    {
        $server = $this->startProtectedServer();

        $process = PhpProcess::start(self::CHILD, $this->childVars($server, $source), true, array_merge(deadbolt_php_command(), ['-d', 'zend.exception_ignore_args=0', '-d', 'error_log=/dev/null']));
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
        $secrets = [
            'the password' => self::PASSWORD,
            'the encoded password' => rawurlencode(self::PASSWORD),
            'the wrong password' => self::WRONG_PASSWORD,
            'the encoded wrong password' => rawurlencode(self::WRONG_PASSWORD),
        ];
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

    private const CHILD = <<<'PHP'
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
}
