<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\DeadboltStore;
use Deadbolt\Bridge\Symfony\LockFactory;
use Deadbolt\Bridge\Symfony\NativeLock;
use Deadbolt\Bridge\Symfony\StoreFactory;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\Exception\InvalidArgumentException;
use Symfony\Component\Lock\Key;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\LockInterface;
use Symfony\Component\Lock\SharedLockInterface;
use Symfony\Component\Lock\Store\FlockStore as SymfonyFlockStore;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * The bridge's LockFactory: a Symfony LockFactory whose locks are Deadbolt's native Lock, for code typed against
 * Symfony's interfaces; and the StoreFactory entry that picks Deadbolt's stores from a DSN.
 */
final class SymfonyBridgeLockTest extends DeadboltTestCase
{
    /** Code written for Symfony, unchanged: it takes a Symfony LockFactory and types its locks as LockInterface. */
    private static function runJob(SymfonyLockFactory $factory, string $resource, array &$log): void
    {
        $lock = $factory->createLock($resource, 30.0);
        self::takes($lock);
        if (!$lock->acquire()) {
            $log[] = 'busy';

            return;
        }
        try {
            $log[] = 'ran';
        } finally {
            $lock->release();
        }
    }

    private static function takes(LockInterface $lock): void
    {
    }

    public function testCodeTypedAgainstSymfonyRunsOnDeadboltsNativeLock(): void
    {
        $factory = new LockFactory(new RedisStore(SharedRedis::dsn()));
        $this->assertInstanceOf(SymfonyLockFactory::class, $factory);
        $resource = 'bridge-job-'.bin2hex(random_bytes(4));
        $log = [];
        self::runJob($factory, $resource, $log);
        $holder = $factory->createLock($resource);
        $this->assertInstanceOf(NativeLock::class, $holder);
        $this->assertInstanceOf(SharedLockInterface::class, $holder);
        $this->assertTrue($holder->acquire());
        self::runJob($factory, $resource, $log);
        $this->assertSame(['ran', 'busy'], $log);

        // Deadbolt's additions, through the Symfony-typed lock.
        $this->assertIsInt($holder->getFencingToken());
        $this->assertFalse($factory->createLock($resource)->acquire(true, 0.2), 'a deadline');
        $this->assertFalse($holder->isLost());
        $holder->release();
    }

    /** Failures are symfony/lock's exception classes, with Deadbolt's as the previous one. */
    public function testFailuresAreSymfonysExceptions(): void
    {
        $factory = new LockFactory(new RedisStore('redis://127.0.0.1:1?timeout=0.2'));
        $lock = $factory->createLock('unreachable');
        try {
            $lock->acquire();
            $this->fail('acquired on a closed port');
        } catch (\Symfony\Component\Lock\Exception\LockAcquiringException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\LockAcquiringException::class, $e->getPrevious());
        }

        $memory = new LockFactory(new InMemoryStore());
        $held = $memory->createLock('held');
        $this->assertTrue($held->acquire());
        $other = $memory->createLock('held');
        try {
            $other->refresh();
            $this->fail('refreshed a lock it does not hold');
        } catch (\Symfony\Component\Lock\Exception\LockConflictedException|\Symfony\Component\Lock\Exception\LockAcquiringException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\ExceptionInterface::class, $e->getPrevious());
        }
        $held->release();
    }

    /**
     * Issue 25, item 15: a TTL of 0 through the bridge's factory let Deadbolt's InvalidTtlException escape code that
     * catches symfony/lock's ExceptionInterface.
     */
    public function testBadArgumentsToTheFactoryAreSymfonysExceptionsToo(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        foreach ([
            'createLock' => static fn () => $factory->createLock('bridge-ttl', 0),
            'createLock, then acquire' => static fn () => $factory->createLock('bridge-ttl', -1.0)->acquire(),
            'createLockFromKey' => static fn () => $factory->createLockFromKey(new Key('bridge-ttl'), 0),
        ] as $what => $call) {
            try {
                $call();
                $this->fail("$what: a TTL of 0 was taken");
            } catch (\Symfony\Component\Lock\Exception\ExceptionInterface $e) {
                $this->assertInstanceOf(\Symfony\Component\Lock\Exception\InvalidTtlException::class, $e, $what);
                $this->assertInstanceOf(\Deadbolt\Exception\InvalidTtlException::class, $e->getPrevious(), $what);
            }
        }
    }

    /**
     * Issue 25, item 15: the bridge's StoreFactory wrapped its call in a closure that kept the DSN, so with
     * zend.exception_ignore_args=0 the password was in getTrace() (the closure's bound variables).
     */
    public function testADsnPasswordNeverReachesAnExceptionTrace(): void
    {
        $ignoreArgs = ini_set('zend.exception_ignore_args', '0');
        try {
            StoreFactory::createStore('deadbolt+redis://:NotInAnyTrace-4711@127.0.0.1:1?bogus=1');
            $this->fail('a bogus option was taken');
        } catch (InvalidArgumentException $e) {
            for ($seen = $e; null !== $seen; $seen = $seen->getPrevious()) {
                $this->assertStringNotContainsString('NotInAnyTrace', print_r($seen->getTrace(), true));
                $this->assertStringNotContainsString('NotInAnyTrace', $seen->getTraceAsString());
                $this->assertStringNotContainsString('NotInAnyTrace', $seen->getMessage());
            }
        } finally {
            ini_set('zend.exception_ignore_args', (string) $ignoreArgs);
        }
    }

    /** A Key that symfony/lock's RedisStore saved becomes a native lock with its token: refresh and release work. */
    public function testALockFromASymfonyKeyOwnsWhatThatKeyHolds(): void
    {
        $resource = 'bridge-key-'.bin2hex(random_bytes(4));
        $symfony = new SymfonyRedisStore(SharedRedis::newPhpRedis());
        $key = new Key($resource);
        $symfony->save($key);

        $factory = new LockFactory(new RedisStore(SharedRedis::dsn()));
        $lock = $factory->createLockFromKey($key, 30.0);
        $this->assertTrue($lock->isAcquired(), 'the token came from the Key');
        $lock->refresh(15.0);
        $lock->release();
        $this->assertFalse($symfony->exists($key), 'released for symfony/lock too');
    }

    public function testTheStoreFactoryPicksDeadboltBehindItsPrefix(): void
    {
        $this->assertInstanceOf(DeadboltStore::class, StoreFactory::createStore('deadbolt+in-memory'));
        $redis = StoreFactory::createStore('deadbolt+'.SharedRedis::dsn());
        $this->assertInstanceOf(DeadboltStore::class, $redis);
        $this->assertInstanceOf(RedisStore::class, $redis->deadboltStore());
        $flock = StoreFactory::createStore('deadbolt+flock://'.$this->tempDir());
        $this->assertInstanceOf(DeadboltStore::class, $flock);
        $semaphore = StoreFactory::createStore('deadbolt+semaphore?hash=md5');
        $this->assertInstanceOf(\Deadbolt\Store\SemaphoreStore::class, $semaphore->deadboltStore());
        $this->assertInstanceOf(SymfonyFlockStore::class, StoreFactory::createStore('flock'), 'other DSNs are symfony/lock\'s');
        try {
            StoreFactory::createStore('deadbolt+nosuch://x');
            $this->fail('an unknown scheme was taken');
        } catch (InvalidArgumentException $e) {
            $this->assertInstanceOf(\Deadbolt\Exception\InvalidArgumentException::class, $e->getPrevious());
        }
        // Symfony's own Lock on the store a DSN picked.
        $lock = (new SymfonyLockFactory($redis))->createLock('bridge-dsn-'.bin2hex(random_bytes(4)));
        $this->assertTrue($lock->acquire());
        $lock->release();
    }

    public function testTheLoggerReachesTheNativeLocks(): void
    {
        $logger = new class() extends \Psr\Log\AbstractLogger {
            /** @var list<string> */
            public array $messages = [];

            public function log($level, $message, array $context = []): void
            {
                $this->messages[] = (string) $message;
            }
        };
        $factory = new LockFactory(new InMemoryStore());
        $factory->setLogger($logger);
        $holder = $factory->createLock('logged');
        $this->assertTrue($holder->acquire());
        $this->assertFalse($factory->createLock('logged')->acquire());
        $holder->release();
        $this->assertNotSame([], $logger->messages);
    }
}
