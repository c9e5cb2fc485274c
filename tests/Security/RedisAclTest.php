<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Security;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;

/**
 * Deadbolt works for a Redis ACL user that has only the commands it needs, on the application's key pattern only
 * (~app:*): every key Deadbolt keeps beside a lock begins with the lock's name.
 *
 * The minimal set was found by removing one command at a time from a working set and watching ACL LOG: the
 * connection sends AUTH (always allowed) and CONFIG GET maxmemory-policy (refused here: no eviction warning, no
 * error); the top-level commands are SCRIPT LOAD, EVALSHA (EVAL as the fallback of a PHP client on NOSCRIPT) and
 * BLPOP (hand-overs to blocking waiters); the scripts run, under the user's own rights, DEL EXISTS HDEL HGET HGETALL
 * GET HSET LLEN LPOP LPUSH PEXPIRE PEXPIREAT PTTL SET TIME TYPE ZADD ZCARD ZRANGE ZREM ZREMRANGEBYSCORE ZREVRANGE ZSCORE.
 * No PING, HELLO, CLIENT or SELECT.
 *
 * The server has maxmemory-policy allkeys-lru: were CONFIG GET allowed, Deadbolt would warn; refused, it must not.
 */
final class RedisAclTest extends DeadboltTestCase
{
    private const ADMIN_PASSWORD = 'Adm1n-acl-pw';
    private const USER = 'locker';
    private const PASSWORD = 'L0cker-acl-pw-9Qz';

    /** The ACL rules of the user, besides its password. */
    public const RULES = [
        'resetkeys', '~app:*', 'resetchannels', '-@all',
        '+script|load', '+evalsha', '+eval', '+blpop',
        '+del', '+exists', '+get', '+hdel', '+hget', '+hgetall', '+hset', '+llen', '+lpop', '+lpush', '+pexpire',
        '+pexpireat', '+pttl', '+set',
        '+time', '+type', '+zadd', '+zcard', '+zrange', '+zrem', '+zremrangebyscore', '+zrevrange', '+zscore',
    ];

    private ?RedisServer $server = null;

    private ?\Redis $admin = null;

    protected function setUp(): void
    {
        $this->server = RedisServer::start(['requirepass' => self::ADMIN_PASSWORD, 'maxmemory-policy' => 'allkeys-lru']);
        $this->admin = $this->server->client(self::ADMIN_PASSWORD);
        $this->admin->rawCommand('ACL', 'SETUSER', self::USER, 'reset', 'on', '>'.self::PASSWORD, ...self::RULES);
        $this->admin->rawCommand('ACL', 'LOG', 'RESET');
    }

    protected function tearDown(): void
    {
        $this->admin = null;
        $this->server?->stop();
        $this->server = null;
    }

    private function dsn(): string
    {
        return $this->server->dsn('', self::USER.':'.self::PASSWORD);
    }

    public function testEveryLockOperationWorksWithTheMinimalCommandSet(): void
    {
        $errorLog = $this->tempDir().'/error.log';
        $previousLog = ini_set('error_log', $errorLog);
        $logger = new class() {
            /** @var list<array{string, string}> */
            public array $records = [];

            public function log($level, $message, array $context = []): void
            {
                $this->records[] = [(string) $level, (string) $message];
            }
        };
        try {
            $store = new RedisStore($this->dsn());
            $factory = new LockFactory($store);
            $factory->setLogger($logger);

            $lock = $factory->createLock('app:report', 30.0);
            $this->assertTrue($lock->acquire());
            $this->assertTrue($lock->isAcquired());
            $fence = $lock->getFencingToken();
            $this->assertIsInt($fence);
            $lock->refresh(20.0);
            $this->assertLessThanOrEqual(20.0, $lock->getRemainingLifetime());
            $other = $factory->createLock('app:report', 30.0);
            $this->assertFalse($other->acquire(false), 'a second owner is refused');
            $lock->release();
            $this->assertFalse($lock->isAcquired());
            $this->assertTrue($other->acquire(false));
            $this->assertGreaterThan($fence, $other->getFencingToken(), 'fencing tokens increase');
            $other->release();

            // A wait with a deadline (the queue app:deadline#deadbolt:queue{...}, BLPOP on its grant list) runs out while held.
            $held = $factory->createLock('app:deadline', 30.0);
            $this->assertTrue($held->acquire());
            $this->assertFalse($factory->createLock('app:deadline', 30.0)->acquire(false, 0.2));
            $held->release();

            // Shared locks: two readers, then a writer is refused, then promotion.
            $reader1 = $factory->createLock('app:shared', 30.0);
            $reader2 = $factory->createLock('app:shared', 30.0);
            $this->assertTrue($reader1->acquireRead());
            $this->assertTrue($reader2->acquireRead());
            $this->assertNull($reader1->getFencingToken());
            $reader1->refresh();
            $writer = $factory->createLock('app:shared', 30.0);
            $this->assertFalse($writer->acquire(false));
            $reader2->release();
            $this->assertTrue($reader1->acquire(false), 'the last reader promotes itself');
            $reader1->release();

            // Store methods directly.
            $key = new Key('app:direct');
            $store->save($key);
            $this->assertTrue($store->exists($key));
            $store->putOffExpiration($key, 5.0);
            $store->delete($key);
            $this->assertFalse($store->exists($key));
            $store->saveRead($key);
            $store->waitAndSave($key);
            $store->delete($key);

            // A blocking wait handed the lock by another process's release (BLPOP on app:wait#deadbolt:queue{...}:TOKEN).
            $holder = $this->holderProcess('app:wait');
            $waiter = $factory->createLock('app:wait', 30.0);
            $this->assertFalse($waiter->acquire(false));
            $holder->writeLine('go');
            $this->assertTrue($waiter->acquire(true), 'the blocking wait gets the lock once the holder releases it');
            $this->assertSame('released', $holder->readLine());
            $this->assertSame(0, $holder->waitForExit(), $holder->stderr());
            $this->assertIsInt($waiter->getFencingToken());
            $waiter->release();
        } finally {
            ini_set('error_log', false === $previousLog ? '' : $previousLog);
        }

        $this->assertSame('', (string) @file_get_contents($errorLog), 'no eviction warning (CONFIG GET is refused) and no error in error_log');
        $this->assertSame([], array_values(array_filter($logger->records, static fn (array $r): bool => \in_array($r[0], ['warning', 'error', 'critical', 'alert', 'emergency'], true))), 'no warning or error record');
        $this->assertSame(['config|get'], $this->deniedObjects(), 'the only command the user is refused is CONFIG GET');
    }

    public function testAKeyOutsideTheAllowedPatternsFailsWithoutShowingThePassword(): void
    {
        $store = new RedisStore($this->dsn());
        $lock = (new LockFactory($store))->createLock('other:report', 30.0);
        try {
            $lock->acquire();
            $this->fail('acquire() on a key outside ~app:* succeeded');
        } catch (LockAcquiringException $e) {
            $previous = $e->getPrevious();
            $this->assertInstanceOf(LockStorageException::class, $previous);
            $this->assertNoPasswordAndNamesTheServer($e);
        }
        $key = new Key('other:report');
        $key->__serialize(); // draws a token: exists() now has to ask Redis
        try {
            $store->exists($key);
            $this->fail('exists() on a key outside the patterns succeeded');
        } catch (LockStorageException $e) {
            $this->assertNoPasswordAndNamesTheServer($e);
        }
        // The same store still works on the allowed keys.
        $allowed = (new LockFactory($store))->createLock('app:report', 30.0);
        $this->assertTrue($allowed->acquire());
        $allowed->release();
        $this->assertContains('other:report', $this->deniedObjects());
    }

    /**
     * An ACL that grants the lock key but not the keys beside it fails the acquire at once, naming the refusal, and
     * leaves nothing held: not the release after the work is done.
     */
    public function testAnAclWithoutTheCompanionKeysFailsTheAcquireNotTheRelease(): void
    {
        $rules = array_map(static fn (string $rule): string => '~app:*' === $rule ? '~app:exact' : $rule, self::RULES);
        $this->admin->rawCommand('ACL', 'SETUSER', self::USER, 'reset', 'on', '>'.self::PASSWORD, ...$rules);
        foreach ([new RedisStore($this->dsn()), $this->clientAsTheUser()] as $store) {
            $lock = (new LockFactory($store))->createLock('app:exact', 30.0);
            try {
                $lock->acquire();
                $this->fail('acquire() succeeded without rights on the keys its release needs');
            } catch (LockAcquiringException $e) {
                $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
                $this->assertMatchesRegularExpression('/permission/i', $e->getPrevious()->getMessage());
                $this->assertNoPasswordAndNamesTheServer($e);
            }
            $this->assertFalse($lock->isAcquired());
            $this->assertSame(0, $this->admin->exists('app:exact'), 'nothing was written');
        }
    }

    private function clientAsTheUser(): RedisStore
    {
        $redis = new \Redis();
        $redis->connect('127.0.0.1', $this->server->port, 5.0);
        $this->assertTrue($redis->auth([self::USER, self::PASSWORD]));

        return new RedisStore($redis);
    }

    public function testTheSameThroughARedisObjectAuthenticatedAsTheUser(): void
    {
        // No script cached on the server: the client object must load or EVAL them itself.
        $this->admin->rawCommand('SCRIPT', 'FLUSH');
        $redis = new \Redis();
        $redis->connect('127.0.0.1', $this->server->port, 5.0);
        $this->assertTrue($redis->auth([self::USER, self::PASSWORD]));
        $store = new RedisStore($redis);
        $factory = new LockFactory($store);

        $lock = $factory->createLock('app:client', 30.0);
        $this->assertTrue($lock->acquire());
        $fence = $lock->getFencingToken();
        $this->assertIsInt($fence);
        $lock->refresh(10.0);
        $this->assertTrue($lock->isAcquired());
        $second = $factory->createLock('app:client', 30.0);
        $this->assertFalse($second->acquire(false));
        $lock->release();
        $this->assertTrue($second->acquire(false));
        $this->assertGreaterThan($fence, $second->getFencingToken());
        $second->release();

        $reader1 = $factory->createLock('app:client-shared', 30.0);
        $reader2 = $factory->createLock('app:client-shared', 30.0);
        $this->assertTrue($reader1->acquireRead());
        $this->assertTrue($reader2->acquireRead());
        $reader1->release();
        $reader2->release();

        // A blocking wait through the client object (BLPOP through it) ends when another process releases.
        $holder = $this->holderProcess('app:client-wait');
        $waiter = $factory->createLock('app:client-wait', 30.0);
        $holder->writeLine('go');
        $this->assertTrue($waiter->acquire(true));
        $this->assertSame(0, $holder->waitForExit(), $holder->stderr());
        $waiter->release();

        $outside = $factory->createLock('other:client', 30.0);
        try {
            $outside->acquire();
            $this->fail('acquire() on a key outside the patterns succeeded through \Redis');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            $this->assertNoPasswordAndNamesTheServer($e);
        }
        $denied = $this->deniedObjects();
        $this->assertSame([], array_values(array_diff($denied, ['config|get', 'other:client'])), 'only the outside key (and CONFIG GET) were refused');
    }

    private function assertNoPasswordAndNamesTheServer(\Throwable $e): void
    {
        $text = '';
        for ($t = $e; null !== $t; $t = $t->getPrevious()) {
            $text .= \get_class($t).': '.$t->getMessage()."\n";
        }
        $this->assertStringContainsString('127.0.0.1:'.$this->server->port, $text);
        $this->assertStringNotContainsString(self::PASSWORD, $text);
        $this->assertStringNotContainsString(rawurlencode(self::PASSWORD), $text);
        $this->assertStringNotContainsString(self::ADMIN_PASSWORD, $text);
    }

    /**
     * Another php process, as the ACL user, that holds $resource until it reads a line, then releases it and says
     * "released".
     */
    private function holderProcess(string $resource): PhpProcess
    {
        $holder = $this->spawn(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
            $lock->acquire() || exit(3);
            echo "held\n";
            fgets(STDIN);
            $lock->release();
            echo "released\n";
            PHP, ['dsn' => $this->dsn(), 'resource' => $resource]);
        $this->assertSame('held', $holder->readLine(), $holder->stderr());

        return $holder;
    }

    /**
     * @return list<string> the distinct "object" fields of ACL LOG (refused commands and keys), sorted
     */
    private function deniedObjects(): array
    {
        $objects = [];
        foreach ((array) $this->admin->rawCommand('ACL', 'LOG') as $entry) {
            $entry = (array) $entry;
            for ($i = 0; $i + 1 < \count($entry); $i += 2) {
                if ('object' === $entry[$i]) {
                    $objects[(string) $entry[$i + 1]] = true;
                }
            }
        }
        $objects = array_keys($objects);
        sort($objects);

        return $objects;
    }
}
