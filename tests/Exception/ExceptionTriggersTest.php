<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Exception;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\InvalidTtlException;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * What really throws each exception: invalid TTLs, unusable directories, store failures, wrong argument types.
 */
final class ExceptionTriggersTest extends DeadboltTestCase
{
    /**
     * @return iterable<string, array{float}>
     */
    public static function invalidTtls(): iterable
    {
        yield 'zero' => [0.0];
        yield 'negative zero' => [-0.0];
        yield 'negative' => [-5.0];
        yield 'NaN' => [NAN];
        yield 'INF' => [INF];
        yield '-INF' => [-INF];
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testCreateLockRejectsAnInvalidTtl(float $ttl): void
    {
        $factory = new LockFactory(new InMemoryStore());

        $this->expectException(InvalidTtlException::class);
        $factory->createLock(uniqid(__METHOD__, true), $ttl);
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testCreateLockFromKeyRejectsAnInvalidTtl(float $ttl): void
    {
        $factory = new LockFactory(new InMemoryStore());

        $this->expectException(InvalidTtlException::class);
        $factory->createLockFromKey(new Key(uniqid(__METHOD__, true)), $ttl);
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testRefreshRejectsAnInvalidTtl(float $ttl): void
    {
        $lock = (new LockFactory(new FlockStore($this->tempDir())))->createLock(uniqid(__METHOD__, true), 30.0);
        $lock->acquire();

        try {
            $lock->refresh($ttl);
            $this->fail('refresh() accepted the TTL '.var_export($ttl, true));
        } catch (InvalidTtlException $e) {
            $this->addToAssertionCount(1);
        }
        $this->assertTrue($lock->isAcquired(), 'a rejected TTL leaves the lock held');
    }

    /**
     * @dataProvider invalidTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('invalidTtls')]
    public function testPutOffExpirationRejectsAnInvalidTtl(float $ttl): void
    {
        $store = new FlockStore($this->tempDir());
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $this->expectException(InvalidTtlException::class);
        $store->putOffExpiration($key, $ttl);
    }

    /**
     * What Key::reduceLifetime() refuses: not a number of seconds. Zero and less are valid there, as in symfony/lock
     * (the Key expires at once: tests/KeyTest.php).
     *
     * @return iterable<string, array{float}>
     */
    public static function nonFiniteTtls(): iterable
    {
        yield 'NaN' => [NAN];
        yield 'INF' => [INF];
    }

    /**
     * @dataProvider nonFiniteTtls
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('nonFiniteTtls')]
    public function testReduceLifetimeRejectsAnInvalidTtl(float $ttl): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        try {
            $key->reduceLifetime($ttl);
            $this->fail('reduceLifetime() accepted the TTL '.var_export($ttl, true));
        } catch (InvalidTtlException $e) {
            $this->addToAssertionCount(1);
        }
        $this->assertNull($key->getRemainingLifetime(), 'a rejected TTL leaves the Key alone');
    }

    public function testANullTtlIsNoTtlNotAnInvalidOne(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true), null);

        $this->assertTrue($lock->acquire());
        $this->assertNull($lock->getRemainingLifetime());
    }

    public function testAFlockDirectoryUnderARegularFileIsAnInvalidArgumentNamingThePath(): void
    {
        $file = tempnam($this->tempDir(), 'file-');
        $path = $file.'/sub';

        try {
            new FlockStore($path);
            $this->fail('FlockStore accepted '.$path);
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($path, $e->getMessage());
        }
    }

    public function testAFlockDsnUnderARegularFileIsAnInvalidArgumentNamingThePath(): void
    {
        $path = tempnam($this->tempDir(), 'file-').'/sub/dir';

        try {
            StoreFactory::createStore('flock://'.$path);
            $this->fail('StoreFactory accepted flock://'.$path);
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($path, $e->getMessage());
        }
    }

    public function testAnUnknownDsnIsAnInvalidArgument(): void
    {
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessageMatches('/zookeeper/');
        StoreFactory::createStore('zookeeper://localhost:2181');
    }

    public function testALockDirectoryThatBecameUnusableIsAStorageErrorInTheStore(): void
    {
        $dir = $this->tempDir().'/locks';
        $store = new FlockStore($dir);
        rmdir($dir);
        touch($dir);

        $this->expectException(LockStorageException::class);
        $store->save(new Key(uniqid(__METHOD__, true)));
    }

    public function testALockDirectoryThatBecameUnusableIsAnAcquiringErrorInTheLock(): void
    {
        $dir = $this->tempDir().'/locks';
        $lock = (new LockFactory(new FlockStore($dir)))->createLock(uniqid(__METHOD__, true));
        rmdir($dir);
        touch($dir);

        try {
            $lock->acquire();
            $this->fail('acquire() succeeded without a usable lock directory.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious(), 'previous is the store\'s error');
        }
        $this->assertFalse($lock->isAcquired());
    }

    public function testAnArrayAsResourceIsATypeError(): void
    {
        $factory = new LockFactory(new InMemoryStore());

        $this->expectException(\TypeError::class);
        $factory->createLock([]);
    }

    public function testAStringAsTtlIsATypeErrorUnderStrictTypes(): void
    {
        $factory = new LockFactory(new InMemoryStore());

        $this->expectException(\TypeError::class);
        $factory->createLock(uniqid(__METHOD__, true), '5');
    }

    public function testAnIntegerAsResourceIsATypeErrorUnderStrictTypes(): void
    {
        $this->expectException(\TypeError::class);
        new Key(42);
    }

    public function testAStringAsBlockingFlagIsATypeErrorUnderStrictTypes(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock(uniqid(__METHOD__, true));

        $this->expectException(\TypeError::class);
        $lock->acquire('yes');
    }

    /**
     * @return iterable<string, array{mixed}>
     */
    public static function notDeadboltStores(): iterable
    {
        yield 'stdClass' => [new \stdClass()];
        yield 'a closure' => [static fn () => null];
        yield 'symfony/lock FlockStore' => [new \Symfony\Component\Lock\Store\FlockStore(sys_get_temp_dir())];
        yield 'a Deadbolt Key' => [new Key('not a store')];
    }

    /**
     * @dataProvider notDeadboltStores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('notDeadboltStores')]
    public function testAnObjectThatIsNotADeadboltStoreIsATypeError(object $notAStore): void
    {
        $this->expectException(\TypeError::class);
        new LockFactory($notAStore);
    }

    public function testAStringAsStoreIsATypeError(): void
    {
        $this->expectException(\TypeError::class);
        new LockFactory('flock');
    }

    public function testASymfonyKeyIsATypeError(): void
    {
        $factory = new LockFactory(new InMemoryStore());

        $this->expectException(\TypeError::class);
        $factory->createLockFromKey(new \Symfony\Component\Lock\Key('symfony'));
    }

    public function testAStoreRefusesASymfonyKey(): void
    {
        $store = new FlockStore($this->tempDir());

        $this->expectException(\TypeError::class);
        $store->save(new \Symfony\Component\Lock\Key('symfony'));
    }

    /**
     * Messages say what was wrong in our words, with numbers as PHP prints them: not 325 digits for 5e-324, not "the
     * TTL" for maxHold, not "not finite" for a finite timeout (a timeout beyond any clock waits without limit).
     */
    public function testMessagesNameWhatWasWrong(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $cases = [
            'a TTL below 1 ns' => [static fn () => $factory->createLock('m', 5e-324), InvalidTtlException::class, 'The TTL must be a positive, finite number of seconds: 5e-324 is below the resolution of 1 nanosecond.'],
            'a negative maxHold' => [static fn () => $factory->createLock('m', 30.0, true, true, -1.0), InvalidTtlException::class, 'maxHold must be a positive, finite number of seconds: -1 is not positive.'],
            'a NaN timeout' => [static fn () => $factory->createLock('m')->acquire(true, NAN), InvalidArgumentException::class, 'The timeout must be a finite number of seconds, 0 or more: NaN is not a number.'],
        ];
        foreach ($cases as $what => [$call, $class, $message]) {
            try {
                $call();
                $this->fail("$what was accepted");
            } catch (\Throwable $e) {
                $this->assertInstanceOf($class, $e, $what);
                $this->assertSame($message, $e->getMessage(), $what);
            }
        }
        $lock = $factory->createLock('m-huge-timeout');
        $this->assertTrue($lock->acquire(true, 1e20), 'a finite timeout beyond any clock');
        $lock->release();
    }

    /**
     * A refresh whose TTL ran out on the way is a failed refresh, not a lock that "expired before it was acquired".
     */
    public function testARefreshThatExpiresOnTheWaySaysSo(): void
    {
        $lock = (new LockFactory(new \Deadbolt\Store\RedisStore(\Deadbolt\Tests\Support\SharedRedis::dsn())))->createLock(uniqid(__METHOD__, true), 30.0);
        $this->assertTrue($lock->acquire());
        try {
            $lock->refresh(0.000001);
            $this->fail('a refresh to 1 µs did not fail');
        } catch (\Throwable $e) {
            $chain = '';
            for ($cause = $e; null !== $cause; $cause = $cause->getPrevious()) {
                $chain .= $cause->getMessage()."\n";
            }
            $this->assertStringContainsString('put off the expiration', $chain);
            $this->assertStringNotContainsString('before it was acquired', $chain);
        }
    }
}
