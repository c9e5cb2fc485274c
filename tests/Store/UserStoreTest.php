<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockReleasingException;
use Deadbolt\Exception\LockStorageException;
use Deadbolt\Key;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\Store\BlockingSharedLockStoreInterface;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\PersistingStoreInterface;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * A store written in PHP (any object implementing Deadbolt\Store\PersistingStoreInterface) works under Deadbolt's
 * LockFactory and Lock through its own methods, as any store does under symfony/lock's Lock.
 */
final class UserStoreTest extends DeadboltTestCase
{
    /** A store in this process's memory that records what it is asked, keeping its owner mark in the Key state. */
    private static function recordingStore(): PersistingStoreInterface
    {
        return new class() implements PersistingStoreInterface {
            /** @var list<string> */
            public array $calls = [];

            /** @var array<string, string> resource => owner mark */
            public array $held = [];

            private static function owner(Key $key): string
            {
                if (!$key->hasState('owner')) {
                    $key->setState('owner', bin2hex(random_bytes(8)));
                }

                return $key->getState('owner');
            }

            public function save(Key $key): void
            {
                $this->calls[] = 'save';
                $owner = self::owner($key);
                if (($this->held[(string) $key] ?? $owner) !== $owner) {
                    throw new \Symfony\Component\Lock\Exception\LockConflictedException('held'); // symfony/lock's: a conflict too
                }
                $this->held[(string) $key] = $owner;
            }

            public function delete(Key $key): void
            {
                $this->calls[] = 'delete';
                if (($this->held[(string) $key] ?? null) === self::owner($key)) {
                    unset($this->held[(string) $key]);
                }
            }

            public function exists(Key $key): bool
            {
                $this->calls[] = 'exists';

                return ($this->held[(string) $key] ?? null) === self::owner($key);
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
                $this->calls[] = 'putOffExpiration('.$ttl.')';
                $key->reduceLifetime($ttl);
            }
        };
    }

    public function testALockRunsOnAPhpStoreThroughItsMethods(): void
    {
        $store = self::recordingStore();
        $factory = new LockFactory($store);
        $lock = $factory->createLock('user-store', 30.0);
        $this->assertTrue($lock->acquire());
        $this->assertSame(['save', 'putOffExpiration(30)'], $store->calls, 'save, then the TTL, as symfony/lock\'s Lock does');
        $this->assertLessThanOrEqual(30.0, $lock->getRemainingLifetime(), 'the lifetime the store gave the Key');
        $this->assertTrue($lock->isAcquired());

        $other = $factory->createLock('user-store', 30.0);
        $this->assertFalse($other->acquire(), 'the store\'s conflict is a refusal');
        $this->assertFalse($other->acquire(true, 0.25), 'a blocking acquire polls save() until its deadline');

        $lock->refresh(10.0);
        $this->assertLessThanOrEqual(10.0, $lock->getRemainingLifetime());
        $store->calls = [];
        $lock->release();
        $this->assertSame(['delete'], $store->calls, 'delete only: Deadbolt asks no exists() after it (README: Differences)');
        $this->assertFalse($lock->isAcquired());
        $this->assertTrue($other->acquire(), 'free once released');
        $other->release();
        $this->assertSame([], $store->held);
    }

    /** State the store keeps in the Key (its owner mark) lasts for the owner's whole hold, as in symfony/lock. */
    public function testTheStoresStateInTheKeyLastsForTheHold(): void
    {
        $store = self::recordingStore();
        $lock = (new LockFactory($store))->createLock('stateful');
        $this->assertTrue($lock->acquire());
        $mark = $store->held['stateful'];
        $this->assertTrue($lock->isAcquired(), 'exists() saw the mark save() left');
        $this->assertTrue($lock->acquire(), 'acquire() again by the same owner');
        $this->assertSame($mark, $store->held['stateful']);
        $lock->release();
        $this->assertArrayNotHasKey('stateful', $store->held, 'delete() saw the mark too');
    }

    public function testReadLocksUseSaveReadOnlyWhereTheStoreHasIt(): void
    {
        $plain = self::recordingStore();
        $reader = (new LockFactory($plain))->createLock('r', null);
        $this->assertTrue($reader->acquireRead());
        $this->assertSame(['save'], $plain->calls, 'no SharedLockStoreInterface: save(), as symfony/lock falls back');
        unset($reader);
        $this->assertSame(['save', 'delete'], $plain->calls, 'a held lock that dies is released through the store');

        $shared = new class() implements BlockingSharedLockStoreInterface {
            /** @var list<string> */
            public array $calls = [];

            public function save(Key $key): void
            {
                $this->calls[] = 'save';
            }

            public function saveRead(Key $key): void
            {
                $this->calls[] = 'saveRead';
            }

            public function waitAndSave(Key $key): void
            {
                $this->calls[] = 'waitAndSave';
            }

            public function waitAndSaveRead(Key $key): void
            {
                $this->calls[] = 'waitAndSaveRead';
            }

            public function delete(Key $key): void
            {
                $this->calls[] = 'delete';
            }

            public function exists(Key $key): bool
            {
                return true;
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
            }
        };
        $lock = (new LockFactory($shared))->createLock('r', null);
        $this->assertTrue($lock->acquireRead(true));
        $this->assertTrue($lock->acquire(true));
        $this->assertSame(['saveRead', 'save'], $shared->calls, 'waits poll save(): waitAndSave() could keep no deadline');
    }

    public function testWhatTheStoreThrowsBecomesDeadboltsExceptions(): void
    {
        $failing = new class() implements PersistingStoreInterface {
            public bool $failRelease = false;

            public function save(Key $key): void
            {
                if ('broken' === (string) $key) {
                    throw new \RuntimeException('the disk is full');
                }
            }

            public function delete(Key $key): void
            {
                if ($this->failRelease) {
                    throw new \RuntimeException('the network is down');
                }
            }

            public function exists(Key $key): bool
            {
                return true;
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
            }
        };
        $factory = new LockFactory($failing);
        try {
            $factory->createLock('broken')->acquire();
            $this->fail('acquired on a failing store');
        } catch (LockAcquiringException $e) {
            $this->assertInstanceOf(LockStorageException::class, $e->getPrevious());
            $this->assertStringContainsString('RuntimeException: the disk is full', $e->getPrevious()->getMessage());
            $this->assertStringContainsString('UserStore(', $e->getPrevious()->getMessage());
            $this->assertInstanceOf(\RuntimeException::class, $e->getPrevious()->getPrevious(), "the store's own");
            $this->assertSame('the disk is full', $e->getPrevious()->getPrevious()->getMessage());
        }
        $lock = $factory->createLock('fine', null, false);
        $this->assertTrue($lock->acquire());
        $failing->failRelease = true;
        try {
            $lock->release();
            $this->fail('released on a failing store');
        } catch (LockReleasingException $e) {
            $this->assertStringContainsString('the network is down', $e->getPrevious()?->getMessage() ?? $e->getMessage());
        }
    }

    /** A decorator over a Deadbolt store (counting, logging...) is a store too: here across processes. */
    public function testADecoratingStoreExcludesAnotherProcess(): void
    {
        $inner = new FlockStore($this->tempDir());
        $decorator = new class($inner) implements PersistingStoreInterface {
            public int $saves = 0;

            public function __construct(private readonly FlockStore $inner)
            {
            }

            public function save(Key $key): void
            {
                ++$this->saves;
                $this->inner->save($key);
            }

            public function delete(Key $key): void
            {
                $this->inner->delete($key);
            }

            public function exists(Key $key): bool
            {
                return $this->inner->exists($key);
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
                $this->inner->putOffExpiration($key, $ttl);
            }
        };
        $factory = new LockFactory($decorator);
        $lock = $factory->createLock('decorated', null);
        $this->assertTrue($lock->acquire());
        $child = $this->fork(static function (Channel $parent) use ($factory): void {
            $waiter = $factory->createLock('decorated', null);
            $parent->send($waiter->acquire() ? 'took it' : 'refused');
            $parent->send($waiter->acquire(true, 30.0) ? 'got it' : 'timed out');
            $waiter->release();
        });
        $this->assertSame('refused', $child->receive(30.0));
        usleep(300_000);
        $lock->release();
        $this->assertSame('got it', $child->receive(30.0));
        $child->wait(30.0);
        $this->assertGreaterThanOrEqual(1, $decorator->saves);
    }

    public function testAnObjectThatIsNoStoreIsStillATypeError(): void
    {
        try {
            new LockFactory(new \ArrayObject());
            $this->fail('took an ArrayObject');
        } catch (\TypeError $e) {
            $this->assertSame('Deadbolt\LockFactory::__construct(): Argument #1 ($store) must be a Deadbolt store or implement Deadbolt\Store\PersistingStoreInterface, ArrayObject given', $e->getMessage());
        }
        $this->expectException(\TypeError::class);
        new Lock(new Key('k'), new \stdClass());
    }

    /** A conflict thrown as Deadbolt's own exception class is a refusal too. */
    public function testDeadboltsConflictExceptionIsARefusal(): void
    {
        $store = new class() implements PersistingStoreInterface {
            public function save(Key $key): void
            {
                throw new LockConflictedException('taken');
            }

            public function delete(Key $key): void
            {
            }

            public function exists(Key $key): bool
            {
                return false;
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
            }
        };
        $this->assertFalse((new LockFactory($store))->createLock('x')->acquire());
    }

    /** A lock still held when the script ends is released through the store's delete(), as Deadbolt's own are. */
    public function testAHeldLockIsReleasedThroughTheStoreWhenTheScriptEnds(): void
    {
        $log = $this->tempDir().'/calls';
        $result = \Deadbolt\Tests\Support\PhpProcess::run(<<<'PHP'
            $store = new class($vars['log']) implements Deadbolt\Store\PersistingStoreInterface {
                public function __construct(private string $log) {}
                public function save(Deadbolt\Key $key): void { file_put_contents($this->log, "save\n", FILE_APPEND); }
                public function delete(Deadbolt\Key $key): void { file_put_contents($this->log, "delete\n", FILE_APPEND); }
                public function exists(Deadbolt\Key $key): bool { return true; }
                public function putOffExpiration(Deadbolt\Key $key, float $ttl): void {}
            };
            $GLOBALS['lock'] = (new Deadbolt\LockFactory($store))->createLock('ends-held', null);
            $GLOBALS['lock']->acquire();
            echo 'held';
            PHP, ['log' => $log]);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame('held', $result['stdout']);
        $this->assertSame("save\ndelete\n", file_get_contents($log));
    }
}
