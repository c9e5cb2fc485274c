<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\Key as SymfonyKey;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * Deadbolt's RedisStore and symfony/lock 5.4's RedisStore (over phpredis) on one Redis are one lock: same key, same
 * sorted set, same tokens. A Key's token passes between the libraries (API-CONTRACT.md, "Deadbolt\Key serialization").
 */
final class SymfonyRedisInteropTest extends DeadboltTestCase
{
    private \Redis $symfonyConnection;

    protected function setUp(): void
    {
        $this->symfonyConnection = SharedRedis::newPhpRedis();
    }

    protected function tearDown(): void
    {
        $this->symfonyConnection->close();
    }

    /**
     * @return iterable<string, array{string, string, bool}>
     */
    public static function modePairs(): iterable
    {
        yield 'exclusive vs exclusive' => ['acquire', 'acquire', false];
        yield 'shared vs exclusive' => ['acquireRead', 'acquire', false];
        yield 'exclusive vs shared' => ['acquire', 'acquireRead', false];
        yield 'shared + shared' => ['acquireRead', 'acquireRead', true];
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testSymfonyHolderVersusDeadbolt(string $symfonyMode, string $deadboltMode, bool $coexist): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfonyFactory()->createLock($resource, 30.0);
        $deadbolt = $this->deadboltFactory()->createLock($resource, 30.0);

        $this->assertTrue($symfony->$symfonyMode(false));

        $this->assertSame($coexist, $deadbolt->$deadboltMode(false));
        $symfony->release();
        $this->assertTrue($coexist || $deadbolt->$deadboltMode(false), 'Deadbolt gets it once Symfony released');
        $this->assertTrue($deadbolt->isAcquired());
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testDeadboltHolderVersusSymfony(string $symfonyMode, string $deadboltMode, bool $coexist): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltFactory()->createLock($resource, 30.0);
        $symfony = $this->symfonyFactory()->createLock($resource, 30.0);

        $this->assertTrue($deadbolt->$deadboltMode(false));

        $this->assertSame($coexist, $symfony->$symfonyMode(false));
        $deadbolt->release();
        $this->assertTrue($coexist || $symfony->$symfonyMode(false), 'Symfony gets it once Deadbolt released');
        $this->assertTrue($symfony->isAcquired());
    }

    public function testBothLibrariesWriteTheSameData(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyKey = new SymfonyKey($resource);
        $symfony = $this->symfonyFactory()->createLockFromKey($symfonyKey, 30.0);
        $symfony->acquire();
        $symfonyShape = $this->shape($resource, $symfonyKey->getState(SymfonyRedisStore::class));
        $symfony->release();

        $key = new Key($resource);
        $deadbolt = $this->deadboltFactory()->createLockFromKey($key, 30.0);
        $deadbolt->acquire();

        $this->assertSame($symfonyShape, $this->shape($resource, $key->__serialize()['token']));
        $this->assertSame(['type' => \Redis::REDIS_ZSET, 'members' => ['<token>', '__write__'], 'same score' => true, 'expires at the score' => true], $symfonyShape);
    }

    public function testAKeyAcquiredBySymfonyIsReleasedByDeadboltWithTheImportedToken(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyKey = new SymfonyKey($resource);
        $symfony = $this->symfonyFactory()->createLockFromKey($symfonyKey, 30.0);
        $this->assertTrue($symfony->acquire());

        $key = new Key($resource);
        $key->__unserialize(['resource' => $resource, 'token' => $symfonyKey->getState(SymfonyRedisStore::class)]);
        $deadbolt = $this->deadboltFactory()->createLockFromKey($key, 30.0);

        $this->assertTrue($deadbolt->isAcquired(), 'Deadbolt owns the lock through the imported token');
        $deadbolt->release();

        $this->assertFalse($symfony->isAcquired());
        $this->assertSame(0, SharedRedis::client()->exists($resource));
        $this->assertTrue($this->symfonyFactory()->createLock($resource)->acquire(), 'free for anyone');
    }

    public function testAKeyAcquiredByDeadboltIsReleasedBySymfonyWithTheExportedToken(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $deadbolt = $this->deadboltFactory()->createLockFromKey($key, 30.0);
        $this->assertTrue($deadbolt->acquireRead());

        $symfonyKey = new SymfonyKey($resource);
        $symfonyKey->setState(SymfonyRedisStore::class, $key->__serialize()['token']);
        $symfony = $this->symfonyFactory()->createLockFromKey($symfonyKey, 30.0);

        $this->assertTrue($symfony->isAcquired(), 'Symfony owns the lock through the exported token');
        $symfony->release();

        $this->assertFalse($deadbolt->isAcquired());
        $this->assertSame(0, SharedRedis::client()->exists($resource));
    }

    public function testDeadboltRefreshesAKeyAcquiredBySymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyKey = new SymfonyKey($resource);
        $symfony = $this->symfonyFactory()->createLockFromKey($symfonyKey, 5.0);
        $this->assertTrue($symfony->acquire());
        $token = $symfonyKey->getState(SymfonyRedisStore::class);
        $key = new Key($resource);
        $key->__unserialize(['resource' => $resource, 'token' => $token]);

        // Without auto-release: this Lock object is dropped while Symfony's lock goes on.
        $this->deadboltFactory()->createLockFromKey($key, 120.0, false)->refresh();

        $redis = SharedRedis::client();
        $this->assertGreaterThan(5_000, $redis->pttl($resource), 'Redis keeps the lock 120 s now');
        $this->assertSame($redis->zScore($resource, $token), $redis->zScore($resource, '__write__'), 'the write marker was extended with the token');
        $this->assertTrue($symfony->isAcquired(), 'Symfony still owns it');
        $this->assertFalse($this->deadboltFactory()->createLock($resource)->acquire(false));
        $symfony->release();
        $this->assertSame(0, $redis->exists($resource));
    }

    public function testSymfonyRefreshesAKeyAcquiredByDeadbolt(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $deadbolt = $this->deadboltFactory()->createLockFromKey($key, 5.0);
        $this->assertTrue($deadbolt->acquire());
        $symfonyKey = new SymfonyKey($resource);
        $symfonyKey->setState(SymfonyRedisStore::class, $key->__serialize()['token']);

        $this->symfonyFactory()->createLockFromKey($symfonyKey, 120.0, false)->refresh();

        $this->assertGreaterThan(5_000, SharedRedis::client()->pttl($resource));
        $this->assertTrue($deadbolt->isAcquired());
        $deadbolt->release();
        $this->assertSame(0, SharedRedis::client()->exists($resource));
    }

    /**
     * symfony/lock <= 5.1 wrote a plain string (SET resource token NX PX ttl): both libraries see it as held.
     */
    public function testALegacyStringLockCountsAsHeldForDeadboltAndSymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $this->assertTrue(SharedRedis::client()->set($resource, base64_encode(random_bytes(32)), ['nx', 'px' => 60_000]));
        $deadbolt = $this->deadboltFactory()->createLock($resource, 30.0);

        $this->assertFalse($deadbolt->acquire(false));
        $this->assertFalse($deadbolt->acquireRead(false));
        $this->assertFalse($deadbolt->isAcquired());
        $this->assertFalse($this->symfonyFactory()->createLock($resource, 30.0)->acquire(false), 'Symfony 5.4 agrees');
        $this->assertSame(\Redis::REDIS_STRING, SharedRedis::client()->type($resource), 'left untouched');
    }

    public function testDeadboltWaitsForASymfonyProcessThatWakesNobody(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfonyProcess = $this->spawn(<<<'PHP'
            require_once getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
            $redis = new \Redis();
            $redis->connect('127.0.0.1', $vars['port']);
            $lock = (new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($redis)))->createLock($vars['resource'], 60.0);
            echo $lock->acquire(false) ? "holding\n" : "refused\n";
            fgets(STDIN);
            // Best effort: release once the waiter sleeps, so the release happens during its wait.
            $deadline = microtime(true) + 10;
            while (microtime(true) < $deadline) {
                $stat = (string) @file_get_contents('/proc/'.$vars['waiter'].'/stat');
                if ('S' === substr($stat, strrpos($stat, ')') + 2, 1)) {
                    break;
                }
                usleep(1000);
            }
            usleep(200000);
            $lock->release();
            echo "released\n";
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource, 'waiter' => posix_getpid()]);
        $this->assertSame('holding', $symfonyProcess->readLine());
        $deadbolt = $this->deadboltFactory()->createLock($resource, 30.0);
        $this->assertFalse($deadbolt->acquire(false));

        $symfonyProcess->writeLine('go');
        $this->assertTrue($deadbolt->acquire(true));

        $this->assertSame('released', $symfonyProcess->readLine(), 'Deadbolt got the lock after Symfony released it');
        $this->assertSame(0, $symfonyProcess->waitForExit(), $symfonyProcess->stderr());
        $this->assertTrue($deadbolt->isAcquired());
    }

    public function testSymfonyInAnotherProcessIsRefusedWhileDeadboltHolds(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltFactory()->createLock($resource, 30.0);
        $deadbolt->acquire();
        $probe = <<<'PHP'
            require_once getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
            $redis = new \Redis();
            $redis->connect('127.0.0.1', $vars['port']);
            $lock = (new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($redis)))->createLock($vars['resource']);
            echo $lock->acquire(false) ? 'acquired' : 'refused';
            PHP;
        $vars = ['port' => SharedRedis::port(), 'resource' => $resource];

        $held = \Deadbolt\Tests\Support\PhpProcess::run($probe, $vars, false);
        $deadbolt->release();
        $free = \Deadbolt\Tests\Support\PhpProcess::run($probe, $vars, false);

        $this->assertSame(['exit' => 0, 'stdout' => 'refused', 'stderr' => ''], $held);
        $this->assertSame(['exit' => 0, 'stdout' => 'acquired', 'stderr' => ''], $free);
    }

    private function symfonyFactory(): SymfonyLockFactory
    {
        return new SymfonyLockFactory(new SymfonyRedisStore($this->symfonyConnection));
    }

    private function deadboltFactory(): LockFactory
    {
        return new LockFactory(new RedisStore(SharedRedis::dsn()));
    }

    /**
     * What a lock looks like in Redis, with the token replaced by a placeholder so both libraries compare.
     *
     * @return array<string, mixed>
     */
    private function shape(string $resource, string $token): array
    {
        $redis = SharedRedis::client();
        $members = $redis->zRange($resource, 0, -1, true);
        $names = array_map(static fn ($name): string => $name === $token ? '<token>' : (string) $name, array_keys($members));
        sort($names, SORT_STRING);

        return [
            'type' => $redis->type($resource),
            'members' => $names,
            'same score' => 1 === \count(array_unique(array_values($members))),
            'expires at the score' => (int) max($members) === $redis->rawCommand('PEXPIRETIME', $resource),
        ];
    }
}
