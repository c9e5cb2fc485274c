<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * The PSR-3 records of SYMFONY-COMPAT.md section 3: exact template, level and context.
 */
final class LoggerTest extends DeadboltTestCase
{
    private object $logger;

    protected function setUp(): void
    {
        // PSR-3 shaped, no PSR-3 dependency: Deadbolt only needs log($level, $message, $context).
        $this->logger = new class() {
            /** @var list<array{0: mixed, 1: string, 2: array<string, mixed>}> */
            public array $records = [];

            public function log($level, $message, array $context = []): void
            {
                $this->records[] = [$level, (string) $message, $context];
            }

            /**
             * @return list<array{0: mixed, 1: string}>
             */
            public function levelsAndMessages(): array
            {
                return array_map(static fn (array $record): array => [$record[0], $record[1]], $this->records);
            }
        };
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquireLogsSuccessAtDebug(string $kind): void
    {
        $factory = $this->factory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, null);

        $lock->acquire();

        $this->assertSame([['debug', 'Successfully acquired the "{resource}" lock.']], $this->logger->levelsAndMessages());
        // Beyond symfony/lock's context: how long the acquire waited, in seconds.
        $this->assertSame(['resource', 'wait'], array_keys($this->logger->records[0][2]));
        $this->assertSame($resource, $this->logger->records[0][2]['resource']);
        $this->assertIsFloat($this->logger->records[0][2]['wait']);
        $this->assertGreaterThanOrEqual(0.0, $this->logger->records[0][2]['wait']);
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcquireReadLogsSuccessForReadingAtDebug(string $kind): void
    {
        $factory = $this->factory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);

        $factory->createLock($resource, null)->acquireRead();

        $this->assertSame(
            ['debug', 'Successfully acquired the "{resource}" lock for reading.'],
            $this->logger->levelsAndMessages()[0] ?? null
        );
        $this->assertSame($resource, $this->logger->records[0][2]['resource']);
    }

    /**
     * Like symfony/lock 7.4, an acquire with a TTL refreshes the lock once it is held, and says so.
     */
    public function testAcquireWithATtlLogsTheAcquisitionThenTheExpiration(): void
    {
        $factory = $this->factory(new FlockStore($this->tempDir()));
        $resource = uniqid(__METHOD__, true);

        $factory->createLock($resource, 30.0)->acquire();

        $this->assertSame([
            ['debug', 'Successfully acquired the "{resource}" lock.'],
            ['debug', 'Expiration defined for "{resource}" lock for "{ttl}" seconds.'],
        ], array_slice($this->logger->levelsAndMessages(), 0, 2));
        $this->assertSame(['resource' => $resource, 'ttl' => 30.0], $this->logger->records[1][2]);
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAConflictLogsAtInfo(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource, null);
        $owner->acquire();
        $factory->setLogger($this->logger);
        $loser = $factory->createLock($resource, null);

        $this->assertFalse($loser->acquire());

        $this->assertSame(
            [['info', 'Failed to acquire the "{resource}" lock. Someone else already acquired the lock.']],
            $this->logger->levelsAndMessages()
        );
        $this->assertSame(['resource' => $resource], $this->logger->records[0][2]);
    }

    public function testAStoreFailureLogsANoticeWithTheException(): void
    {
        $dir = $this->tempDir().'/locks';
        $factory = $this->factory(new FlockStore($dir));
        $resource = uniqid(__METHOD__, true);
        // The directory existed when the store was built; now a regular file stands in its place.
        rmdir($dir);
        touch($dir);

        try {
            $factory->createLock($resource, null)->acquire();
            $this->fail('acquire() succeeded without a usable lock directory.');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(\Throwable::class, $e->getPrevious(), 'previous is the cause');
        }

        $this->assertSame([['notice', 'Failed to acquire the "{resource}" lock.']], $this->logger->levelsAndMessages());
        $context = $this->logger->records[0][2];
        $this->assertSame($resource, $context['resource']);
        $this->assertInstanceOf(\Throwable::class, $context['exception'] ?? null);
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testRefreshLogsTheTtlAtDebug(string $kind): void
    {
        $factory = $this->factory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, null);
        $lock->acquire();
        $this->logger->records = [];

        $lock->refresh(42.5);

        $this->assertSame([['debug', 'Expiration defined for "{resource}" lock for "{ttl}" seconds.']], $this->logger->levelsAndMessages());
        $this->assertSame(['resource' => $resource, 'ttl' => 42.5], $this->logger->records[0][2]);
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testARefreshConflictLogsANotice(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $owner = $factory->createLock($resource, null);
        $owner->acquire();
        $factory->setLogger($this->logger);
        $stranger = $factory->createLock($resource, null);

        try {
            $stranger->refresh(10.0);
            $this->fail('A lock that is not the owner refreshed it.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertSame(
            [['notice', 'Failed to define an expiration for the "{resource}" lock, someone else acquired the lock.']],
            $this->logger->levelsAndMessages()
        );
        $this->assertSame($resource, $this->logger->records[0][2]['resource']);
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testReleaseLogsAtDebug(string $kind): void
    {
        $factory = $this->factory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, null);
        $lock->acquire();
        $this->logger->records = [];

        $lock->release();

        $this->assertSame([['debug', 'Successfully released the "{resource}" lock.']], $this->logger->levelsAndMessages());
        // Beyond symfony/lock's context: how long the lock was held, in seconds.
        $this->assertSame(['resource', 'hold'], array_keys($this->logger->records[0][2]));
        $this->assertIsFloat($this->logger->records[0][2]['hold']);
    }

    /**
     * A wait that ran out at its deadline is not a conflict of a non-blocking acquire: its own record, with the time
     * allowed and the time waited (both were logged as a plain conflict, without figures).
     *
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAWaitThatRunsOutLogsATimeout(string $kind): void
    {
        $store = $this->newStore($kind);
        $resource = uniqid(__METHOD__, true);
        $holder = (new LockFactory($store))->createLock($resource, null);
        $this->assertTrue($holder->acquire());
        $lock = $this->factory($store)->createLock($resource, null);

        $this->assertFalse($lock->acquire(true, 0.05));

        $this->assertSame([['info', 'Failed to acquire the "{resource}" lock within {timeout} seconds.']], $this->logger->levelsAndMessages());
        $context = $this->logger->records[0][2];
        $this->assertSame(['resource', 'wait', 'timeout'], array_keys($context));
        $this->assertEqualsWithDelta(0.05, $context['timeout'], 0.01, 'the time allowed');
        $this->assertGreaterThan(0.0, $context['wait']);

        $this->logger->records = [];
        $this->assertFalse($lock->acquire(false));
        $this->assertSame([['info', 'Failed to acquire the "{resource}" lock. Someone else already acquired the lock.']], $this->logger->levelsAndMessages());
    }

    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testTheAutomaticReleaseDoesNotLog(string $kind): void
    {
        $factory = $this->factory($this->newStore($kind));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, null);
        $lock->acquire();
        $this->logger->records = [];

        unset($lock);

        $this->assertSame([], $this->logger->records);
        $this->assertTrue($factory->createLock($resource)->acquire(), 'the lock was released');
    }

    public function testTheResourceInTheContextIsTheRawBytes(): void
    {
        $factory = $this->factory(new FlockStore($this->tempDir()));
        $resource = "bin\0ary\xff".uniqid(__METHOD__, true);

        $factory->createLock($resource, null)->acquire();

        $this->assertSame($resource, $this->logger->records[0][2]['resource']);
    }

    public function testLocksCreatedAfterSetLoggerLog(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $factory->setLogger($this->logger);
        $lock = $factory->createLock(uniqid(__METHOD__, true), null);

        $lock->acquire();

        $this->assertSame([['debug', 'Successfully acquired the "{resource}" lock.']], $this->logger->levelsAndMessages());
    }

    private function factory(object $store): LockFactory
    {
        $factory = new LockFactory($store);
        $factory->setLogger($this->logger);

        return $factory;
    }
}
