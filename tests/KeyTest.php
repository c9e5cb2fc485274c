<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

final class KeyTest extends DeadboltTestCase
{
    /**
     * @dataProvider resources
     */
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

    public function testSerializingAKeyThrows(): void
    {
        $this->expectException(\Exception::class);
        serialize(new Key(uniqid(__METHOD__, true)));
    }

    public function testSerializingAKeyThatHoldsAFlockLockThrows(): void
    {
        $key = new Key(uniqid(__METHOD__, true));
        (new LockFactory(new FlockStore($this->tempDir())))->createLockFromKey($key, null, false)->acquire();

        $this->expectException(\Exception::class);
        serialize($key);
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
}
