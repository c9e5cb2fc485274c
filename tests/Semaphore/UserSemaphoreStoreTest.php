<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\Exception\InvalidArgumentException;
use Deadbolt\Semaphore\Exception\RuntimeException;
use Deadbolt\Semaphore\Exception\SemaphoreAcquiringException;
use Deadbolt\Semaphore\Exception\SemaphoreExpiredException;
use Deadbolt\Semaphore\Key;
use Deadbolt\Semaphore\PersistingStoreInterface;
use Deadbolt\Semaphore\Semaphore;
use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Semaphore\SemaphoreStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * A semaphore store written in PHP (any object implementing Deadbolt\Semaphore\PersistingStoreInterface), as
 * symfony/semaphore's SemaphoreFactory takes any PersistingStoreInterface: the factory and Semaphore call its
 * methods, its exceptions become symfony/semaphore's (its own one as the previous exception), and a waiting
 * acquire polls its save().
 */
final class UserSemaphoreStoreTest extends DeadboltTestCase
{
    public function testItKeepsTheLimitByWeightAndTakesReleasedWeightBack(): void
    {
        $store = new ArraySemaphoreStore();
        $factory = new SemaphoreFactory($store);
        $heavy = $factory->createSemaphore('jobs', 4, 3, 30.0);
        $this->assertTrue($heavy->acquire());
        $this->assertTrue($heavy->isAcquired());
        $this->assertEqualsWithDelta(30.0, $heavy->getRemainingLifetime(), 1.0, 'the lifetime the store gave its Key');
        $this->assertFalse($factory->createSemaphore('jobs', 4, 2, 30.0)->acquire(), 'over the limit');
        $light = $factory->createSemaphore('jobs', 4, 1, 30.0);
        $this->assertTrue($light->acquire());
        $this->assertSame(4, $store->weightHeld('jobs'));

        $heavy->release();
        $this->assertFalse($heavy->isAcquired());
        $this->assertSame(1, $store->weightHeld('jobs'));
        $again = $factory->createSemaphore('jobs', 4, 3, 30.0);
        $this->assertTrue($again->acquire());
    }

    public function testTheStoreIsHandedOneSemaphoreKeyPerOwnerWithItsLimitAndWeight(): void
    {
        $store = new ArraySemaphoreStore();
        $semaphore = (new SemaphoreFactory($store))->createSemaphore('jobs', 5, 2, 30.0);
        $this->assertTrue($semaphore->acquire());
        $semaphore->refresh();
        $this->assertTrue($semaphore->isAcquired());
        $semaphore->release();

        $keys = array_column($store->calls, 1);
        $this->assertSame(['save', 'putOffExpiration', 'exists', 'delete'], array_column($store->calls, 0));
        $this->assertContainsOnlyInstancesOf(Key::class, $keys);
        $this->assertCount(1, array_unique(array_map('spl_object_id', $keys)), 'one Key object for one owner');
        $this->assertSame(['jobs', 5, 2], [(string) $keys[0], $keys[0]->getLimit(), $keys[0]->getWeight()]);
        $this->assertSame(30.0, $store->calls[0][2], 'save() gets the TTL');
    }

    public function testAWaitingAcquirePollsSaveUntilWeightIsFreedOrItsDeadline(): void
    {
        $store = new ArraySemaphoreStore();
        $factory = new SemaphoreFactory($store);
        $holder = $factory->createSemaphore('jobs', 1, 1, 0.5);
        $this->assertTrue($holder->acquire());

        $waiter = $factory->createSemaphore('jobs', 1, 1, 30.0);
        $store->calls = [];
        $started = microtime(true);
        $this->assertTrue($waiter->acquire(true, 5.0), 'the slot expired in the store after 0.5 s');
        $waited = microtime(true) - $started;
        $this->assertGreaterThan(0.4, $waited);
        $this->assertLessThan(2.0, $waited);
        $saves = \count($store->calls);
        $this->assertGreaterThanOrEqual(4, $saves, 'save() polled about every 100 ms');
        $this->assertLessThanOrEqual(9, $saves, 'save() polled about every 100 ms');

        $late = $factory->createSemaphore('jobs', 1, 1, 30.0);
        $started = microtime(true);
        $this->assertFalse($late->acquire(true, 0.3));
        $this->assertEqualsWithDelta(0.3, microtime(true) - $started, 0.2, 'gave up at its deadline');
    }

    /**
     * A signal handler runs during the poll, as during a lock's on a store written in PHP: its exception ends the
     * wait (acquire() throws it).
     */
    public function testASignalHandlersExceptionEndsAWaitOnIt(): void
    {
        $result = PhpProcess::run(<<<'PHP'
            final class FullStore implements Deadbolt\Semaphore\PersistingStoreInterface
            {
                public int $saves = 0;
                public function save(Deadbolt\Semaphore\Key $key, float $ttlInSecond): void
                {
                    ++$this->saves;
                    throw new Deadbolt\Semaphore\Exception\SemaphoreAcquiringException($key, 'full');
                }
                public function putOffExpiration(Deadbolt\Semaphore\Key $key, float $ttlInSecond): void {}
                public function delete(Deadbolt\Semaphore\Key $key): void {}
                public function exists(Deadbolt\Semaphore\Key $key): bool { return false; }
            }
            $store = new FullStore();
            $semaphore = (new Deadbolt\Semaphore\SemaphoreFactory($store))->createSemaphore('jobs', 1, 1, 60.0);
            pcntl_async_signals(true);
            pcntl_signal(SIGALRM, function () { throw new RuntimeException('stop waiting'); });
            pcntl_alarm(1);
            $started = microtime(true);
            try {
                var_dump($semaphore->acquire(true));
            } catch (Throwable $e) {
                echo get_class($e), ': ', $e->getMessage(), "\n";
            }
            printf("%d %.1f\n", $store->saves, microtime(true) - $started);
            PHP, [], timeout: 60.0);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $lines = explode("\n", trim($result['stdout']));
        $this->assertSame('RuntimeException: stop waiting', $lines[0], $result['stdout']);
        [$saves, $waited] = explode(' ', $lines[1] ?? '0 0');
        $this->assertLessThan(3.0, (float) $waited, 'the wait went on after the signal');
        $this->assertGreaterThanOrEqual(5, (int) $saves, 'save() was polled about every 100 ms');
        $this->assertLessThanOrEqual(15, (int) $saves, 'save() was polled about every 100 ms');
    }

    public function testAFailureOfSaveIsARuntimeExceptionWithTheStoresOwnAsPrevious(): void
    {
        $store = new ArraySemaphoreStore();
        $store->failure = new \LogicException('the disk is full');
        $semaphore = (new SemaphoreFactory($store))->createSemaphore('jobs', 2, 1, 30.0);
        try {
            $semaphore->acquire();
            $this->fail('the failure was not reported');
        } catch (RuntimeException $e) {
            $this->assertStringContainsString('Failed to acquire the "jobs" semaphore', $e->getMessage());
            $this->assertStringContainsString('ArraySemaphoreStore', $e->getMessage());
            $this->assertSame($store->failure, $e->getPrevious());
        }
        $this->assertFalse($semaphore->isAcquired());
    }

    public function testASlotTheStoreLostIsExpiredAtRefresh(): void
    {
        $store = new ArraySemaphoreStore();
        $semaphore = (new SemaphoreFactory($store))->createSemaphore('jobs', 2, 1, 30.0);
        $this->assertTrue($semaphore->acquire());
        $store->held = [];
        $this->expectException(SemaphoreExpiredException::class);
        $semaphore->refresh();
    }

    /**
     * The store throws symfony/semaphore's exceptions as symfony/semaphore's stores do, with its constructor
     * (`new SemaphoreAcquiringException($key, 'full')`): no room is acquire() answering false, a slot that is gone
     * refresh() throwing SemaphoreExpiredException.
     */
    public function testTheStoresSymfonyStyleExceptionsAreNoRoomAndAGoneSlot(): void
    {
        $store = new ArraySemaphoreStore();
        $factory = new SemaphoreFactory($store);
        $holder = $factory->createSemaphore('jobs', 1, 1, 30.0);
        $this->assertTrue($holder->acquire());

        $this->assertFalse($factory->createSemaphore('jobs', 1, 1, 30.0)->acquire(), 'no room');
        $this->assertCount(1, $store->thrown);
        $this->assertInstanceOf(SemaphoreAcquiringException::class, $store->thrown[0]);
        $this->assertSame('The semaphore "jobs" could not be acquired: full.', $store->thrown[0]->getMessage());

        $store->held = [];
        try {
            $holder->refresh();
            $this->fail('a slot the store lost was refreshed');
        } catch (SemaphoreExpiredException $e) {
            $this->assertStringStartsWith('The semaphore ', $e->getMessage());
        }
        $this->assertCount(2, $store->thrown);
        $this->assertInstanceOf(SemaphoreExpiredException::class, $store->thrown[1]);
        $this->assertSame('The semaphore "jobs" has expired: gone.', $store->thrown[1]->getMessage());
    }

    public function testASemaphoreWithoutTtlIsRefusedWithAClearMessage(): void
    {
        $factory = new SemaphoreFactory(new ArraySemaphoreStore());
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('UserStore(Deadbolt\\Tests\\Semaphore\\ArraySemaphoreStore) needs a TTL for a semaphore');
        $factory->createSemaphore('jobs', 2, 1, null);
    }

    public function testAutoRefreshIsRefusedAsTheRefresherCannotCallPhp(): void
    {
        $factory = new SemaphoreFactory(new ArraySemaphoreStore());
        $this->expectException(InvalidArgumentException::class);
        $this->expectExceptionMessage('autoRefresh needs a store the refresher can reach without PHP');
        $factory->createSemaphore('jobs', 2, 1, 30.0, true, true);
    }

    public function testASemaphoreInACycleWithItsStoreIsCollectedAndReleased(): void
    {
        $store = new ArraySemaphoreStore();
        $semaphore = (new SemaphoreFactory($store))->createSemaphore('cycle', 1, 1, 30.0);
        $store->kept[] = $semaphore;
        $this->assertTrue($semaphore->acquire());
        $weakSemaphore = \WeakReference::create($semaphore);
        $weakStore = \WeakReference::create($store);
        $calls = &$store->calls;
        unset($semaphore, $store);

        gc_collect_cycles();
        $this->assertNull($weakSemaphore->get(), 'the Semaphore was collected');
        $this->assertNull($weakStore->get(), 'and its store');
        $this->assertContains('delete', array_column($calls, 0), 'the slot was given back through the store');
    }

    public function testASemaphoreKeyInItsOwnStateIsCollected(): void
    {
        $key = new Key('cycle-self', 2);
        $key->setState('me', $key);
        $clone = clone $key;
        $weak = [\WeakReference::create($key), \WeakReference::create($clone)];
        unset($key, $clone);

        gc_collect_cycles();
        $this->assertNull($weak[0]->get(), 'the Key was collected');
        $this->assertNull($weak[1]->get(), 'and its clone (which holds it in its state)');
    }

    public function testASemaphoreAndASemaphoreStoreTakeItDirectly(): void
    {
        $store = new ArraySemaphoreStore();
        $semaphore = new Semaphore(new Key('jobs', 1), $store, 30.0);
        $this->assertTrue($semaphore->acquire());

        $wrapped = new SemaphoreStore($store);
        $key = new Key('jobs', 1);
        try {
            $wrapped->save($key, 30.0);
            $this->fail('the store was full');
        } catch (SemaphoreAcquiringException) {
        }
        $this->assertFalse($wrapped->exists($key));
        $semaphore->release();
        $wrapped->save($key, 30.0);
        $this->assertTrue($wrapped->exists($key));
    }
}

/**
 * An array-backed semaphore store, as an application would write one: each Key's owner is the token it keeps in
 * the Key's state (as symfony/semaphore's stores do); slots expire after their TTL.
 */
final class ArraySemaphoreStore implements PersistingStoreInterface
{
    /** @var array<string, array<string, array{int, float}>> resource => token => [weight, expiry] */
    public array $held = [];

    /** @var list<array{string, Key, 2?: float}> */
    public array $calls = [];

    public ?\Throwable $failure = null;

    /** @var list<\Throwable> the exceptions it threw, symfony/semaphore's way: `new SemaphoreAcquiringException($key, 'full')` */
    public array $thrown = [];

    /** @var list<object> what the application keeps in its store (a cycle through it) */
    public array $kept = [];

    public function save(Key $key, float $ttlInSecond): void
    {
        $this->calls[] = ['save', $key, $ttlInSecond];
        if (null !== $this->failure) {
            throw $this->failure;
        }
        $resource = (string) $key;
        $token = $this->token($key);
        if (!isset($this->held[$resource][$token]) && $this->weightHeld($resource) + $key->getWeight() > $key->getLimit()) {
            throw $this->thrown[] = new SemaphoreAcquiringException($key, 'full');
        }
        $this->held[$resource][$token] = [$key->getWeight(), microtime(true) + $ttlInSecond];
        $key->reduceLifetime($ttlInSecond);
    }

    public function putOffExpiration(Key $key, float $ttlInSecond): void
    {
        $this->calls[] = ['putOffExpiration', $key, $ttlInSecond];
        $resource = (string) $key;
        $token = $this->token($key);
        if (!isset($this->held[$resource][$token])) {
            throw $this->thrown[] = new SemaphoreExpiredException($key, 'gone');
        }
        $this->held[$resource][$token][1] = microtime(true) + $ttlInSecond;
        $key->reduceLifetime($ttlInSecond);
    }

    public function delete(Key $key): void
    {
        $this->calls[] = ['delete', $key];
        unset($this->held[(string) $key][$this->token($key)]);
    }

    public function exists(Key $key): bool
    {
        $this->calls[] = ['exists', $key];
        $slot = $this->held[(string) $key][$this->token($key)] ?? null;

        return null !== $slot && $slot[1] > microtime(true);
    }

    public function weightHeld(string $resource): int
    {
        $now = microtime(true);

        return array_sum(array_map(
            static fn (array $slot): int => $slot[1] > $now ? $slot[0] : 0,
            $this->held[$resource] ?? []
        ));
    }

    private function token(Key $key): string
    {
        if (!$key->hasState(__CLASS__)) {
            $key->setState(__CLASS__, bin2hex(random_bytes(16)));
        }

        return $key->getState(__CLASS__);
    }
}
