<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\Exception\InvalidArgumentException;
use Deadbolt\Semaphore\Exception\SemaphoreExpiredException;
use Deadbolt\Semaphore\Key;
use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Semaphore\SemaphoreInterface;
use Deadbolt\Store\CombinedStore;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Strategy\UnanimousStrategy;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * symfony/semaphore's API on Deadbolt's stores: at most `limit` weight held, weights, release, refresh, the Key's
 * checks and symfony/semaphore's exceptions; and Deadbolt's deadline on a waiting acquire.
 */
final class SemaphoreTest extends DeadboltTestCase
{
    private ?string $flockDir = null;

    /**
     * @return iterable<string, array{string}>
     */
    public static function stores(): iterable
    {
        yield 'in memory' => ['memory'];
        yield 'flock' => ['flock'];
        yield 'redis by DSN' => ['redis'];
        yield 'redis over \Redis' => ['phpredis'];
        yield 'redis over Predis' => ['predis'];
    }

    private function factory(string $kind): SemaphoreFactory
    {
        static $memory = null;
        return new SemaphoreFactory(match ($kind) {
            'memory' => $memory ??= new InMemoryStore(),
            'flock' => new FlockStore($this->flockDir ??= $this->tempDir()),
            'redis' => new RedisStore(SharedRedis::dsn()),
            'phpredis' => new RedisStore(SharedRedis::client()),
            'predis' => new RedisStore(SharedRedis::newPredis()),
        });
    }

    /** @dataProvider stores */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testAtMostTheLimitIsHeldByWeight(string $kind): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = $this->factory($kind);
        $two = $factory->createSemaphore($resource, 3, 2);
        $one = $factory->createSemaphore($resource, 3);
        $more = $factory->createSemaphore($resource, 3);
        $this->assertInstanceOf(SemaphoreInterface::class, $two);

        $this->assertTrue($two->acquire());
        $this->assertTrue($one->acquire());
        $this->assertFalse($more->acquire(), '3 of 3 held');
        $this->assertTrue($two->isAcquired());
        $this->assertFalse($more->isAcquired());

        $two->release();
        $this->assertFalse($two->isAcquired());
        $this->assertTrue($more->acquire(), 'the weight released is free again');
        $this->assertTrue($one->acquire(), 'acquiring what one holds again is fine');
    }

    /** @dataProvider stores */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testAWaitGivesUpAtItsDeadline(string $kind): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = $this->factory($kind);
        $holder = $factory->createSemaphore($resource, 1);
        $waiter = $factory->createSemaphore($resource, 1);
        $this->assertTrue($holder->acquire());
        $this->assertFalse($waiter->acquire(true, 0.2));
        $this->assertFalse($waiter->isAcquired());
        $holder->release();
        $this->assertTrue($waiter->acquire(true, 5.0));
    }

    public function testRefreshPutsTheSlotOffAndFailsOnceItIsGone(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = $this->factory('redis');
        $semaphore = $factory->createSemaphore($resource, 2, 1, 10.0);
        $this->assertTrue($semaphore->acquire());
        $this->assertEqualsWithDelta(10.0, $semaphore->getRemainingLifetime(), 1.0);
        $semaphore->refresh(100.0);
        $this->assertEqualsWithDelta(100.0, $semaphore->getRemainingLifetime(), 1.0);
        $this->assertFalse($semaphore->isExpired());

        SharedRedis::client()->del('{'.$resource.'}:time', '{'.$resource.'}:weight');
        try {
            $semaphore->refresh();
            $this->fail('a refresh of a slot that is gone succeeded');
        } catch (SemaphoreExpiredException $e) {
            $this->assertStringContainsString($resource, $e->getMessage());
        }
        $this->assertFalse($semaphore->isAcquired());
    }

    public function testTheRefresherKeepsASlotAndFindsItLostOnceItIsGone(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = $this->factory('redis');
        $semaphore = $factory->createSemaphore($resource, 1, 1, 1.0, true, true);
        $this->assertTrue($semaphore->acquire());
        $redis = SharedRedis::client();
        // Kept past its TTL by the refresher: its slot's expiry moves on.
        $first = (float) $redis->zScore('{'.$resource.'}:time', $redis->zRange('{'.$resource.'}:time', 0, 0)[0]);
        $deadline = microtime(true) + 20.0;
        while ((float) $redis->zScore('{'.$resource.'}:time', $redis->zRange('{'.$resource.'}:time', 0, 0)[0] ?? '') <= $first && microtime(true) < $deadline) {
            usleep(20_000);
        }
        $this->assertGreaterThan($first, (float) $redis->zScore('{'.$resource.'}:time', $redis->zRange('{'.$resource.'}:time', 0, 0)[0]));
        $this->assertTrue($semaphore->isAcquired());

        $redis->del('{'.$resource.'}:time', '{'.$resource.'}:weight');
        while (!$semaphore->isLost() && microtime(true) < $deadline) {
            usleep(20_000);
        }
        $this->assertTrue($semaphore->isLost(), 'the refresher did not find the slot gone');
        $this->expectException(SemaphoreExpiredException::class);
        $semaphore->release();
    }

    public function testSemaphoresAreCountedInTheMetrics(): void
    {
        $before = \Deadbolt\Metrics::snapshot()['counters']['acquired'] ?? 0;
        $semaphore = $this->factory('memory')->createSemaphore(uniqid(__METHOD__, true), 2);
        $this->assertTrue($semaphore->acquire());
        $semaphore->release();
        $this->assertSame($before + 1, \Deadbolt\Metrics::snapshot()['counters']['acquired'] ?? 0);
    }

    public function testTheKeyChecksWhatSymfonySemaphoresKeyChecks(): void
    {
        $key = new Key('jobs', 5, 2);
        $this->assertSame('jobs', (string) $key);
        $this->assertSame(5, $key->getLimit());
        $this->assertSame(2, $key->getWeight());
        foreach ([
            [0, 1, 'The limit (0) should be greater than 0.'],
            [3, 0, 'The weight (0) should be greater than 0.'],
            [2, 3, 'The weight (3) should be lower or equals to the limit (2).'],
        ] as [$limit, $weight, $message]) {
            try {
                new Key('jobs', $limit, $weight);
                $this->fail("limit $limit, weight $weight accepted");
            } catch (InvalidArgumentException $e) {
                $this->assertSame($message, $e->getMessage());
                $this->assertInstanceOf(\InvalidArgumentException::class, $e);
            }
        }
    }

    public function testASemaphoreFromAKeyHoldsThatKeysWeight(): void
    {
        $factory = $this->factory('memory');
        $resource = uniqid(__METHOD__, true);
        $heavy = $factory->createSemaphoreFromKey(new Key($resource, 4, 3), 30.0);
        $this->assertTrue($heavy->acquire());
        $this->assertFalse($factory->createSemaphoreFromKey(new Key($resource, 4, 2))->acquire());
        $this->assertTrue($factory->createSemaphoreFromKey(new Key($resource, 4, 1))->acquire());
    }

    public function testAStoreThatKeepsNoSemaphoresIsRefusedByTheFactory(): void
    {
        $combined = new CombinedStore([new InMemoryStore()], new UnanimousStrategy());
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('cannot keep semaphores');
        new SemaphoreFactory($combined);
    }

    public function testASemaphoreCannotBeSerialized(): void
    {
        $semaphore = $this->factory('memory')->createSemaphore('x', 1);
        $this->expectException(\BadMethodCallException::class);
        serialize($semaphore);
    }

    public function testASemaphoreDyingWhileHeldGivesItsWeightBack(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = $this->factory('redis');
        $semaphore = $factory->createSemaphore($resource, 1);
        $this->assertTrue($semaphore->acquire());
        unset($semaphore);
        $this->assertTrue($factory->createSemaphore($resource, 1)->acquire());
    }

    public function testTheLoggerGetsSymfonySemaphoresMessages(): void
    {
        $logger = new class () {
            /** @var list<string> */
            public array $messages = [];

            /** @param array<string, mixed> $context */
            public function log(mixed $level, string|\Stringable $message, array $context = []): void
            {
                $replace = [];
                foreach ($context as $name => $value) {
                    $replace['{'.$name.'}'] = \is_scalar($value) || $value instanceof \Stringable ? (string) $value : '';
                }
                $this->messages[] = strtr((string) $message, $replace);
            }
        };
        $factory = $this->factory('memory');
        $factory->setLogger($logger);
        $holder = $factory->createSemaphore('logged', 1, 1, 20.0);
        $other = $factory->createSemaphore('logged', 1);
        $holder->acquire();
        $other->acquire();
        $holder->refresh(30.0);
        $this->assertContains('Expiration defined for "logged" semaphore for "30" seconds.', $logger->messages);
        $this->assertContains('Successfully acquired the "logged" semaphore.', $logger->messages);
        $this->assertContains(
            'Failed to acquire the "logged" semaphore. Someone else already acquired the semaphore.',
            $logger->messages
        );
    }
}
