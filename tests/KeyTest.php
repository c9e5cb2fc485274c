<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\UnserializableKeyException;
use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

final class KeyTest extends DeadboltTestCase
{
    /**
     * @dataProvider resources
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('resources')]
    public function testToStringReturnsTheResourceBytesUnchanged(string $resource): void
    {
        $key = new Key($resource);

        $this->assertSame($resource, (string) $key);
        $this->assertSame($resource, $key->__toString());
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function resources(): iterable
    {
        yield 'plain' => ['invoice:42'];
        yield 'empty' => [''];
        yield 'NUL bytes' => ["\0a\0b\0"];
        yield 'invalid UTF-8' => ["\xc3\x28\xff"];
        yield 'multibyte' => ['émoji✓'];
        yield '1 MB' => [random_bytes(1 << 20)];
    }

    public function testANewKeyHasNoLifetime(): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        $this->assertNull($key->getRemainingLifetime());
        $this->assertFalse($key->isExpired());
    }

    public function testReduceLifetimeSetsAnExpiry(): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        $key->reduceLifetime(10.0);

        $this->assertGreaterThan(0.0, $key->getRemainingLifetime());
        $this->assertLessThanOrEqual(10.0, $key->getRemainingLifetime());
        $this->assertFalse($key->isExpired());
    }

    public function testReduceLifetimeKeepsTheEarlierExpiry(): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        $key->reduceLifetime(10.0);
        $key->reduceLifetime(1000.0);

        $this->assertLessThanOrEqual(10.0, $key->getRemainingLifetime());
        $key->reduceLifetime(2.0);
        $this->assertLessThanOrEqual(2.0, $key->getRemainingLifetime());
    }

    public function testResetLifetimeRemovesTheExpiry(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $key->reduceLifetime(10.0);

        $key->resetLifetime();

        $this->assertNull($key->getRemainingLifetime());
        $this->assertFalse($key->isExpired());
        $key->reduceLifetime(1000.0);
        $this->assertGreaterThan(10.0, $key->getRemainingLifetime(), 'a new expiry is not capped by the old one');
    }

    public function testAKeyExpiresOnceItsLifetimeIsOver(): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        $key->reduceLifetime(1e-6);
        $deadline = hrtime(true) + 5_000_000_000;
        while (!$key->isExpired() && hrtime(true) < $deadline) {
            usleep(100);
        }

        $this->assertTrue($key->isExpired());
        $this->assertLessThanOrEqual(0.0, $key->getRemainingLifetime());
    }

    public function testAFreshKeyRoundTripsThroughSerialize(): void
    {
        $resource = "\0".uniqid(__METHOD__, true)."\xff";
        $key = new Key($resource);

        $copy = unserialize(serialize($key));

        $this->assertInstanceOf(Key::class, $copy);
        $this->assertNotSame($key, $copy);
        $this->assertSame($resource, (string) $copy);
        $this->assertSame($key->__serialize(), $copy->__serialize(), 'the copy has the same resource and token');
        $this->assertNull($copy->getRemainingLifetime());
    }

    /**
     * @return iterable<string, array{float}>
     */
    public static function zeroOrLess(): iterable
    {
        yield 'zero' => [0.0];
        yield 'negative zero' => [-0.0];
        yield 'negative' => [-5.0];
        yield '-INF' => [-INF];
    }

    /**
     * As symfony/lock's Key (its CombinedStore calls reduceLifetime(0) to mark a failed Key).
     *
     * @dataProvider zeroOrLess
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('zeroOrLess')]
    public function testReduceLifetimeToZeroOrLessExpiresTheKeyAtOnce(float $ttl): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $key->reduceLifetime(60.0);
        $key->reduceLifetime($ttl);
        $this->assertTrue($key->isExpired());
        $this->assertLessThanOrEqual(0.0, $key->getRemainingLifetime());
        $key->reduceLifetime(60.0);
        $this->assertTrue($key->isExpired(), 'only ever shortened');
    }

    /** Stores keep their own data in a Key by name, and it travels with the Key. */
    public function testStateIsKeptByNameAndTravelsWithTheKey(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        $this->assertFalse($key->hasState('a'));
        $this->assertNull($key->getState('a'));
        $object = new \ArrayObject([1, 2]);
        $key->setState('a', $object);
        $key->setState('b', 'x');
        $key->setState('b', 'y');
        $this->assertSame($object, $key->getState('a'), 'the same PHP value, by reference count');
        $this->assertSame('y', $key->getState('b'));
        $key->removeState('b');
        $this->assertFalse($key->hasState('b'));
        $copy = unserialize(serialize($key));
        $this->assertEquals($object, $copy->getState('a'));
        $this->assertFalse($copy->hasState('b'));
        unset($object);
        $this->assertSame([1, 2], $key->getState('a')->getArrayCopy(), 'the Key keeps its state alive');
    }

    public function testAKeyMarkedUnserializableRefusesSerialize(): void
    {
        $key = new Key('marked');
        $this->assertIsString(serialize($key));
        $key->markUnserializable();
        $this->expectException(UnserializableKeyException::class);
        serialize($key);
    }

    public function testUnserializeRestoresAnExpiryThatIsAlreadyPast(): void
    {
        $key = new Key('past');
        $key->__unserialize(['resource' => 'past', 'token' => base64_encode(random_bytes(32)), 'expiringTime' => microtime(true) - 5.0]);
        $this->assertTrue($key->isExpired());
        $key->__unserialize(['resource' => 'later', 'token' => base64_encode(random_bytes(32)), 'expiringTime' => microtime(true) + 20.0]);
        $this->assertEqualsWithDelta(20.0, $key->getRemainingLifetime(), 1.0);
    }

    /**
     * Issue 25, item 11: an expiry 30 s in the past came back as -0.000002 (clamped to now); symfony/lock's Key
     * gives -30. And one more than ~31 years ahead came back as "expired now".
     */
    public function testUnserializeRestoresHowLongAgoTheKeyExpiredAndRefusesAnExpiryBeyondAnyTtl(): void
    {
        $key = new Key('long-past');
        $key->__unserialize(['resource' => 'long-past', 'token' => base64_encode(random_bytes(32)), 'expiringTime' => microtime(true) - 30.0]);
        $this->assertEqualsWithDelta(-30.0, $key->getRemainingLifetime(), 1.0);
        $this->assertTrue($key->isExpired());

        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('more than');
        $key->__unserialize(['resource' => 'far', 'token' => base64_encode(random_bytes(32)), 'expiringTime' => microtime(true) + 40 * 365.25 * 86400]);
    }

    /** Issue 25, item 16: var_export() gave \Deadbolt\Key::__set_state(array()), the resource lost. */
    public function testVarExportShowsTheResourceAndItsCodeRebuildsAKeyForIt(): void
    {
        $key = new Key("res-x'\0y");
        $key->reduceLifetime(30.0);
        $code = var_export($key, true);
        $this->assertStringContainsString("'resource' => 'res-x", $code);
        $this->assertStringNotContainsString($key->__serialize()['token'], $code, 'never the token');

        $rebuilt = eval('return '.$code.';');
        $this->assertInstanceOf(Key::class, $rebuilt);
        $this->assertSame("res-x'\0y", (string) $rebuilt);
        $this->assertNotSame($key->__serialize()['token'], $rebuilt->__serialize()['token'], 'a new owner of the resource');

        $this->expectException(InvalidArgumentException::class);
        Key::__set_state(['resource' => 42]);
    }

    public function testSerializeGivesTheResourceAndAStableToken(): void
    {
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);

        $data = $key->__serialize();

        $this->assertSame(['resource', 'token', 'expiringTime', 'state'], array_keys($data));
        $this->assertNull($data['expiringTime'], 'a new Key has no lifetime');
        $this->assertSame([], $data['state']);
        $this->assertSame($resource, $data['resource']);
        $this->assertIsString($data['token']);
        $this->assertSame(44, \strlen($data['token']), 'like symfony/lock: base64 of 32 random bytes');
        $this->assertSame(32, \strlen((string) base64_decode($data['token'], true)));
        $this->assertSame($data, $key->__serialize(), 'the token is drawn once');
        $this->assertNotSame($data['token'], (new Key($resource))->__serialize()['token'], 'each Key has its own token');
    }

    public function testAKeyHoldingARedisLockRoundTripsAndStillOwnsTheLock(): void
    {
        $store = new RedisStore(SharedRedis::dsn());
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        (new LockFactory($store))->createLockFromKey($key, 30.0, false)->acquire();

        $start = hrtime(true);
        $copy = unserialize(serialize($key));

        $original = $key->__serialize();
        $copied = $copy->__serialize();
        // The expiry travels as wall-clock time: each of these calls converts between the monotonic deadline and
        // the wall clock with two clock reads, so each copy of it may be off by as long as its call took (under
        // valgrind, milliseconds), and never by more than all four calls together (10 µs for the floats' rounding).
        $calls = (hrtime(true) - $start) / 1e9;
        $this->assertEqualsWithDelta($original['expiringTime'], $copied['expiringTime'], $calls + 0.00001);
        unset($original['expiringTime'], $copied['expiringTime']);
        $this->assertSame($original, $copied);
        $this->assertEqualsWithDelta(30.0, $copy->getRemainingLifetime(), 1.0, 'the copy keeps the remaining lifetime');
        $this->assertTrue($store->exists($copy), 'the copy owns the lock');
        $store->delete($copy);
        $this->assertFalse($store->exists($key), 'released through the copy');
    }

    public function testAKeyHoldingAnInMemoryLockRoundTripsAndStillOwnsTheLock(): void
    {
        $store = new InMemoryStore();
        $key = new Key(uniqid(__METHOD__, true));
        $store->save($key);

        $copy = unserialize(serialize($key));

        $this->assertSame($key->__serialize(), $copy->__serialize());
        $this->assertTrue($store->exists($copy));
    }

    public function testSerializingAKeyThatHoldsAFlockLockThrows(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        (new LockFactory(new FlockStore($this->tempDir())))->createLockFromKey($key, null, false)->acquire();

        $this->expectException(UnserializableKeyException::class);
        serialize($key);
    }

    public function testCallingSerializeOnAKeyThatHoldsAFlockLockThrows(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        (new FlockStore($this->tempDir()))->save($key);

        $this->expectException(UnserializableKeyException::class);
        $key->__serialize();
    }

    public function testUnserializeImportsAToken(): void
    {
        $resource = uniqid(__METHOD__, true);
        $token = base64_encode(random_bytes(32));
        $key = new Key('something else');

        $key->__unserialize(['resource' => $resource, 'token' => $token]);

        $this->assertSame($resource, (string) $key);
        $this->assertSame(['resource' => $resource, 'token' => $token, 'expiringTime' => null, 'state' => []], $key->__serialize());
    }

    public function testATokenOf1024BytesIsAccepted(): void
    {
        $key = new Key('');
        $token = str_repeat('t', 1024);

        $key->__unserialize(['resource' => 'r', 'token' => $token]);

        $this->assertSame($token, $key->__serialize()['token']);
    }

    /**
     * @dataProvider badSerializedData
     *
     * @param array<mixed> $data
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('badSerializedData')]
    public function testUnserializeRejectsBadData(array $data): void
    {
        $key = new Key(uniqid(__METHOD__, true));

        $this->expectException(InvalidArgumentException::class);
        $key->__unserialize($data);
    }

    /**
     * @dataProvider badSerializedData
     *
     * @param array<mixed> $data
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('badSerializedData')]
    public function testUnserializeOfBadDataThrows(array $data): void
    {
        $payload = sprintf('O:%d:"%s":%d:{%s}', \strlen(Key::class), Key::class, \count($data), substr(serialize($data), strpos(serialize($data), '{') + 1, -1));

        $this->expectException(InvalidArgumentException::class);
        unserialize($payload);
    }

    /**
     * @return iterable<string, array{array<mixed>}>
     */
    public static function badSerializedData(): iterable
    {
        yield 'empty' => [[]];
        yield 'no token' => [['resource' => 'r']];
        yield 'no resource' => [['token' => 'abc']];
        yield 'token not a string' => [['resource' => 'r', 'token' => 42]];
        yield 'token null' => [['resource' => 'r', 'token' => null]];
        yield 'resource not a string' => [['resource' => ['r'], 'token' => 'abc']];
        yield 'empty token' => [['resource' => 'r', 'token' => '']];
        yield 'token of 1025 bytes' => [['resource' => 'r', 'token' => str_repeat('t', 1025)]];
        yield 'the reserved __write__' => [['resource' => 'r', 'token' => '__write__']];
    }

    public function testAForgedSerializedKeyDoesNotBecomeAKey(): void
    {
        $payload = sprintf('O:%d:"%s":0:{}', \strlen(Key::class), Key::class);

        try {
            $result = @unserialize($payload);
        } catch (\Throwable $e) {
            $this->addToAssertionCount(1);

            return;
        }
        $this->assertNotInstanceOf(Key::class, $result);
    }

    /**
     * A Key is an ownership, not a value: two distinct Keys are never ==, whatever their resources (two keys of one
     * resource exclude each other), and a Key is == only to itself.
     */
    public function testTwoDistinctKeysAreNotEqual(): void
    {
        $a = new Key('a');
        $this->assertFalse($a == new Key('b'));
        $this->assertFalse($a == new Key('a'), 'the same resource');
        $this->assertTrue($a == $a);
    }
}
