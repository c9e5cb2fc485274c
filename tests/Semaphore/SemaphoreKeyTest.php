<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\Exception\InvalidArgumentException;
use Deadbolt\Semaphore\Exception\RuntimeException;
use Deadbolt\Semaphore\Key;
use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A semaphore's Key is serializable and cloneable as symfony/semaphore's (a plain object): serialize() keeps the
 * resource, limit, weight, owner token, expiry and state, so another process can release or check the slot the
 * Key holds on Redis; a clone is an independent Key with the same state. Malformed payloads are refused with
 * messages that say what is wrong and never quote the token.
 */
final class SemaphoreKeyTest extends DeadboltTestCase
{
    public function testASerializedKeyKeepsItsResourceLimitWeightStateAndExpiry(): void
    {
        $key = new Key("jobs\0binary", 5, 2);
        $key->setState('app', ['job' => 42]);
        $key->reduceLifetime(100.0);

        $copy = unserialize(serialize($key));

        $this->assertInstanceOf(Key::class, $copy);
        $this->assertSame("jobs\0binary", (string) $copy);
        $this->assertSame(5, $copy->getLimit());
        $this->assertSame(2, $copy->getWeight());
        $this->assertSame(['job' => 42], $copy->getState('app'));
        $this->assertEqualsWithDelta(100.0, $copy->getRemainingLifetime(), 2.0);
        $this->assertFalse($copy->isExpired());
    }

    public function testAKeyWithoutExpiryComesBackWithoutOne(): void
    {
        $copy = unserialize(serialize(new Key('jobs', 1)));
        $this->assertNull($copy->getRemainingLifetime());
    }

    public function testAnotherProcessReleasesTheSlotThroughTheSerializedKey(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $key = new Key($resource, 3, 2);
        $semaphore = $factory->createSemaphoreFromKey($key, 300.0);
        $this->assertTrue($semaphore->acquire());
        $this->assertFalse($factory->createSemaphore($resource, 3, 2)->acquire(), 'the slot is not held');

        $result = PhpProcess::run(<<<'PHP'
            $factory = new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
            $semaphore = $factory->createSemaphoreFromKey(unserialize($vars['key']), 300.0, false);
            echo $semaphore->isAcquired() ? "held\n" : "not held\n";
            $semaphore->release();
            echo $semaphore->isAcquired() ? "held\n" : "released\n";
            PHP, ['dsn' => SharedRedis::dsn(), 'key' => serialize($key)]);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame("held\nreleased\n", $result['stdout']);
        $this->assertFalse($semaphore->isAcquired());
        $this->assertTrue($factory->createSemaphore($resource, 3, 2)->acquire(), 'the weight was not given back');
    }

    public function testAnotherProcessPutsTheSlotOffThroughTheSerializedKey(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $key = new Key($resource, 1);
        $semaphore = $factory->createSemaphoreFromKey($key, 5.0);
        $this->assertTrue($semaphore->acquire());

        $result = PhpProcess::run(<<<'PHP'
            $factory = new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
            $semaphore = $factory->createSemaphoreFromKey(unserialize($vars['key']), 300.0, false);
            $semaphore->refresh();
            echo $semaphore->isAcquired() ? "held\n" : "not held\n";
            PHP, ['dsn' => SharedRedis::dsn(), 'key' => serialize($key)]);

        $this->assertSame("held\n", $result['stdout'], $result['stderr']);
        $ttl = SharedRedis::client()->ttl('{'.$resource.'}:time');
        $this->assertGreaterThan(60, $ttl, 'the other process did not put the slot off');
        $semaphore->release();
    }

    /**
     * A forked child holds nothing of its parent's (SemaphoreProcessesTest): its copy of the Key never exports the
     * parent's token, and neither does a clone of that copy, while a Key it receives serialized carries the slot.
     */
    public function testAForkedChildNeverExportsItsParentsTokenButUsesAKeySentToIt(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $key = new Key($resource, 1);
        $semaphore = $factory->createSemaphoreFromKey($key, 300.0);
        $this->assertTrue($semaphore->acquire());
        $serialized = serialize($key);

        $child = $this->fork(static function (Channel $parent) use ($key, $serialized): void {
            $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
            $inherited = $factory->createSemaphoreFromKey(unserialize(serialize($key)), 300.0, false);
            $cloned = $factory->createSemaphoreFromKey(clone $key, 300.0, false);
            $sent = $factory->createSemaphoreFromKey(unserialize($serialized), 300.0, false);
            $parent->send(implode(' ', array_map(
                static fn ($s): string => $s->isAcquired() ? 'held' : 'free',
                [$inherited, $cloned, $sent]
            )));
            $sent->release();
        });
        $this->assertSame('free free held', $child->receive());
        $child->wait();
        $this->assertFalse($semaphore->isAcquired(), 'the child released the slot through the Key sent to it');
    }

    public function testAKeyHoldingFlockSlotsIsNotSerializable(): void
    {
        $key = new Key(uniqid(__METHOD__, true), 2);
        $semaphore = (new SemaphoreFactory(new FlockStore($this->tempDir())))->createSemaphoreFromKey($key);
        $this->assertTrue($semaphore->acquire());
        try {
            serialize($key);
            $this->fail('a Key holding flock slots was serialized');
        } catch (RuntimeException $e) {
            $this->assertStringContainsString('bound to this process (flock, System V semaphore)', $e->getMessage());
        }
        $semaphore->release();
        $this->assertInstanceOf(Key::class, unserialize(serialize($key)), 'released, it travels again');
    }

    /**
     * @return iterable<string, array{array<string, mixed>, string}>
     */
    public static function malformedPayloads(): iterable
    {
        $token = 'SECRET-TOKEN-'.str_repeat('x', 31);
        $good = ['resource' => 'jobs', 'token' => $token, 'limit' => 3, 'weight' => 1];
        yield 'no token' => [array_diff_key($good, ['token' => 0]), 'needs string "resource" and "token" fields'];
        yield 'no resource' => [array_diff_key($good, ['resource' => 0]), 'needs string "resource" and "token" fields'];
        yield 'an empty token' => [['token' => ''] + $good, 'must be a non-empty string of at most 1024 bytes'];
        yield 'a token that is not UTF-8' => [['token' => "\xff".$token] + $good, '"token" must be valid UTF-8'];
        yield 'no limit' => [array_diff_key($good, ['limit' => 0]), 'needs integer "limit" and "weight" fields'];
        yield 'a string weight' => [['weight' => '1'] + $good, 'needs integer "limit" and "weight" fields'];
        yield 'a limit of 0' => [['limit' => 0] + $good, 'The limit (0) should be greater than 0.'];
        yield 'a weight of 0' => [['weight' => 0] + $good, 'The weight (0) should be greater than 0.'];
        yield 'a weight over the limit' => [['weight' => 4] + $good, 'The weight (4) should be lower or equals to the limit (3).'];
        yield 'an infinite expiry' => [['expiringTime' => INF] + $good, '"expiringTime" must be a finite number'];
        yield 'an expiry a century ahead' => [['expiringTime' => time() + 100 * 365 * 86400.0] + $good, 'more than the longest TTL'];
    }

    /**
     * @dataProvider malformedPayloads
     *
     * @param array<string, mixed> $fields
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('malformedPayloads')]
    public function testAMalformedPayloadIsRefusedWithAClearMessage(array $fields, string $message): void
    {
        $payload = serialize($fields);
        $serialized = 'O:22:"Deadbolt\Semaphore\Key"'.substr($payload, 1);
        try {
            unserialize($serialized);
            $this->fail('accepted: '.json_encode(array_keys($fields)));
        } catch (InvalidArgumentException $e) {
            $this->assertStringContainsString($message, $e->getMessage());
            $this->assertStringNotContainsString('SECRET-TOKEN', $e->getMessage());
            $this->assertInstanceOf(\InvalidArgumentException::class, $e);
        }
    }

    public function testTheTokenIsNeverShown(): void
    {
        $key = new Key('jobs', 2);
        $data = $key->__serialize();
        $this->assertSame(44, \strlen($data['token']), "symfony/semaphore's token shape");
        ob_start();
        var_dump($key);
        print_r($key);
        var_export($key);
        $shown = (string) ob_get_clean();
        $this->assertStringNotContainsString($data['token'], $shown);
        $this->assertStringNotContainsString($data['token'], json_encode($key));
    }

    public function testACloneHoldsWhatTheOriginalHoldsAndIsIndependentOfIt(): void
    {
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource, 2, 2);
        $key->setState('app', 'original');
        $semaphore = $factory->createSemaphoreFromKey($key, 300.0);
        $this->assertTrue($semaphore->acquire());

        $clone = clone $key;
        $this->assertSame($resource, (string) $clone);
        $this->assertSame([2, 2], [$clone->getLimit(), $clone->getWeight()]);
        $this->assertSame('original', $clone->getState('app'));
        $this->assertEqualsWithDelta($key->getRemainingLifetime(), $clone->getRemainingLifetime(), 1.0);
        $this->assertTrue($factory->createSemaphoreFromKey($clone, 300.0, false)->isAcquired(), 'same owner');

        $clone->setState('app', 'changed');
        $clone->reduceLifetime(10.0);
        $this->assertSame('original', $key->getState('app'));
        $this->assertGreaterThan(200.0, $key->getRemainingLifetime());

        $factory->createSemaphoreFromKey($clone, 300.0, false)->release();
        $this->assertFalse($semaphore->isAcquired(), 'the clone released the slot both hold');
    }

    public function testACloneOfAnUnusedKeyIsAnOwnerOfItsOwn(): void
    {
        $factory = new SemaphoreFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource, 2);
        $clone = clone $key;
        $held = $factory->createSemaphoreFromKey($key);
        $this->assertTrue($held->acquire());
        $other = $factory->createSemaphoreFromKey($clone);
        $this->assertFalse($other->isAcquired());
        $this->assertTrue($other->acquire(), 'the second unit of the limit');
    }
}
