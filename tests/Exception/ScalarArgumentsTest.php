<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Exception;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;
use PHPUnit\Framework\TestCase;

use function Deadbolt\Tests\Support\acquire_in_weak_mode;
use function Deadbolt\Tests\Support\call_in_weak_mode;
use function Deadbolt\Tests\Support\create_lock_in_weak_mode;
use function Deadbolt\Tests\Support\new_key_in_weak_mode;
use function Deadbolt\Tests\Support\php_own_refusal_in_weak_mode;
use function Deadbolt\Tests\Support\reduce_lifetime_in_weak_mode;
use function Deadbolt\Tests\Support\refresh_in_weak_mode;

require_once __DIR__.'/../Support/weak_mode_calls.php';

/**
 * Scalar arguments are read as PHP reads those of its own functions: coerced in a caller's weak mode (42 is "42",
 * "30" is 30.0, 1 is true), refused under strict_types, and refused in PHP's own TypeError wording.
 */
final class ScalarArgumentsTest extends TestCase
{
    public function testWeakModeCoercesAsPhpAndSymfonyLockDo(): void
    {
        // A store whose locks expire, so that the TTL shows.
        $factory = new LockFactory(new RedisStore(SharedRedis::dsn()));
        $number = random_int(1_000_000_000, 9_999_999_999);
        $lock = create_lock_in_weak_mode($factory, $number, '30');
        $resource = (string) $number;
        $this->assertTrue(acquire_in_weak_mode($lock, 1));
        $this->assertTrue($lock->isAcquired());
        $this->assertLessThanOrEqual(30.0, $lock->getRemainingLifetime());
        $this->assertGreaterThan(20.0, $lock->getRemainingLifetime());
        $this->assertFalse($factory->createLock($resource)->acquire(), 'the int named the resource by its digits');
        refresh_in_weak_mode($lock, '10');
        $this->assertLessThanOrEqual(10.0, $lock->getRemainingLifetime());
        $lock->release();

        $key = new_key_in_weak_mode(7);
        $this->assertSame('7', (string) $key);
        reduce_lifetime_in_weak_mode($key, '5');
        $this->assertLessThanOrEqual(5.0, $key->getRemainingLifetime());
        $this->assertSame('1.5', (string) new_key_in_weak_mode(1.5));
        $this->assertSame('1', (string) new_key_in_weak_mode(true));

        // A Stringable object is a string in weak mode, as for PHP's own functions.
        $name = new class() {
            public function __toString(): string
            {
                return 'stringable';
            }
        };
        $this->assertSame('stringable', (string) new_key_in_weak_mode($name));

        // acquire('') is acquire(false); a blocking flag of 0.0 too.
        $factory = new LockFactory(new InMemoryStore());
        $other = create_lock_in_weak_mode($factory, 'x', 30);
        $this->assertTrue(acquire_in_weak_mode($other, ''));
        $this->assertFalse(acquire_in_weak_mode($factory->createLock('x'), 0.0));
        $other->release();
    }

    public function testANullResourceInWeakModeIsPhpsDeprecationThenTheEmptyName(): void
    {
        $deprecations = [];
        set_error_handler(static function (int $level, string $message) use (&$deprecations): bool {
            $deprecations[] = $message;

            return true;
        }, \E_DEPRECATED);
        try {
            $key = new_key_in_weak_mode(null);
        } finally {
            restore_error_handler();
        }
        $this->assertSame('', (string) $key);
        $this->assertSame(['Deadbolt\Key::__construct(): Passing null to parameter #1 ($resource) of type string is deprecated'], $deprecations);
    }

    /** @return iterable<string, array{\Closure, string}> */
    public static function refusedInWeakMode(): iterable
    {
        $factory = static fn (): LockFactory => new LockFactory(new InMemoryStore());
        yield 'array as ttl' => [static fn () => create_lock_in_weak_mode($factory(), 'x', []), 'Deadbolt\LockFactory::createLock(): Argument #2 ($ttl) must be of type ?float, array given'];
        yield 'non-numeric ttl' => [static fn () => create_lock_in_weak_mode($factory(), 'x', 'abc'), 'Deadbolt\LockFactory::createLock(): Argument #2 ($ttl) must be of type ?float, string given'];
        yield 'array as resource' => [static fn () => create_lock_in_weak_mode($factory(), []), 'Deadbolt\LockFactory::createLock(): Argument #1 ($resource) must be of type string, array given'];
        yield 'array as maxHold' => [static fn () => create_lock_in_weak_mode($factory(), 'x', 1.0, true, false, []), 'Deadbolt\LockFactory::createLock(): Argument #5 ($maxHold) must be of type ?float, array given'];
        yield 'array as blocking' => [static fn () => acquire_in_weak_mode($factory()->createLock('x'), []), 'Deadbolt\Lock::acquire(): Argument #1 ($blocking) must be of type bool, array given'];
        yield 'array as timeout' => [static fn () => acquire_in_weak_mode($factory()->createLock('x'), true, []), 'Deadbolt\Lock::acquire(): Argument #2 ($timeout) must be of type ?float, array given'];
        yield 'array as refresh ttl' => [static fn () => refresh_in_weak_mode($factory()->createLock('x'), []), 'Deadbolt\Lock::refresh(): Argument #1 ($ttl) must be of type ?float, array given'];
        yield 'word as reduceLifetime ttl' => [static fn () => reduce_lifetime_in_weak_mode(new Key('k'), 'soon'), 'Deadbolt\Key::reduceLifetime(): Argument #1 ($ttl) must be of type float, string given'];
        yield 'array as Lock ttl' => [static fn () => call_in_weak_mode(static fn () => new \Deadbolt\Lock(new Key('k'), new InMemoryStore(), [])), 'Deadbolt\Lock::__construct(): Argument #3 ($ttl) must be of type ?float, array given'];
        yield 'word as RedisStore initialTtl' => [static fn () => call_in_weak_mode(static fn () => new \Deadbolt\Store\RedisStore('redis://127.0.0.1:1', 'long')), 'Deadbolt\Store\RedisStore::__construct(): Argument #2 ($initialTtl) must be of type float, string given'];
        yield 'array as lock path' => [static fn () => call_in_weak_mode(static fn () => new \Deadbolt\Store\FlockStore([])), 'Deadbolt\Store\FlockStore::__construct(): Argument #1 ($lockPath) must be of type ?string, array given'];
    }

    /**
     * @dataProvider refusedInWeakMode
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('refusedInWeakMode')]
    public function testWhatWeakModeRefusesIsPhpsOwnTypeError(\Closure $call, string $message): void
    {
        try {
            $call();
            $this->fail('accepted');
        } catch (\TypeError $e) {
            $this->assertSame($message, $e->getMessage());
            $this->assertNull($e->getPrevious(), 'one TypeError, not one wrapped in another');
        }
    }

    /** An object without __toString() is named as PHP names it (its class), whichever PHP this is. */
    public function testAnObjectIsNamedAsPhpNamesIt(): void
    {
        $given = substr(php_own_refusal_in_weak_mode(new \stdClass()), \strlen('str_repeat(): Argument #1 ($string) must be of type string, '));
        try {
            new_key_in_weak_mode(new \stdClass());
            $this->fail('accepted');
        } catch (\TypeError $e) {
            $this->assertSame('Deadbolt\Key::__construct(): Argument #1 ($resource) must be of type string, '.$given, $e->getMessage());
        }
    }

    public function testStrictTypesRefusesWhatPhpRefusesThere(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        foreach ([
            'Deadbolt\LockFactory::createLock(): Argument #1 ($resource) must be of type string, int given' => static fn () => $factory->createLock(42),
            'Deadbolt\LockFactory::createLock(): Argument #2 ($ttl) must be of type ?float, string given' => static fn () => $factory->createLock('x', '30'),
            'Deadbolt\Lock::acquire(): Argument #1 ($blocking) must be of type bool, int given' => static fn () => $factory->createLock('x')->acquire(1),
            'Deadbolt\LockFactory::createLock(): Argument #3 ($autoRelease) must be of type bool, string given' => static fn () => $factory->createLock('x', 1.0, 'yes'),
        ] as $message => $call) {
            try {
                $call();
                $this->fail('accepted: '.$message);
            } catch (\TypeError $e) {
                $this->assertSame($message, $e->getMessage());
            }
        }
        // An int is a float even under strict_types, as for PHP's own functions.
        $lock = $factory->createLock('x', 30);
        $this->assertTrue($lock->acquire(false, 1));
        $lock->release();
    }
}
