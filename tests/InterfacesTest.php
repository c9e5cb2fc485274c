<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\DeadlineLockInterface;
use Deadbolt\FencedLockInterface;
use Deadbolt\Key;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\LockInterface;
use Deadbolt\SharedLockInterface;
use Deadbolt\Store\BlockingSharedLockStoreInterface;
use Deadbolt\Store\BlockingStoreInterface;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\PersistingStoreInterface;
use Deadbolt\Store\RedisStore;
use Deadbolt\Store\SharedLockStoreInterface;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * The interfaces the extension registers (symfony/lock's, under Deadbolt's names, and Deadbolt's own): every class
 * implements what it supports, code can type against them, and PHPUnit can double each.
 */
final class InterfacesTest extends DeadboltTestCase
{
    public function testEveryLockAndStoreImplementsWhatItSupports(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock('typed');
        foreach ([LockInterface::class, SharedLockInterface::class, DeadlineLockInterface::class, FencedLockInterface::class] as $interface) {
            $this->assertInstanceOf($interface, $lock);
        }
        foreach ([new InMemoryStore(), new FlockStore($this->tempDir()), new RedisStore(SharedRedis::dsn())] as $store) {
            foreach ([PersistingStoreInterface::class, BlockingStoreInterface::class, SharedLockStoreInterface::class, BlockingSharedLockStoreInterface::class] as $interface) {
                $this->assertInstanceOf($interface, $store, $store::class);
            }
        }
        $this->assertTrue(is_subclass_of(SharedLockInterface::class, LockInterface::class));
        $this->assertTrue(is_subclass_of(DeadlineLockInterface::class, SharedLockInterface::class));
        $this->assertTrue(is_subclass_of(BlockingSharedLockStoreInterface::class, SharedLockStoreInterface::class));
        $this->assertTrue(is_subclass_of(BlockingStoreInterface::class, PersistingStoreInterface::class));
    }

    /** The OTA example's "release quietly": typed against the interface, tested without any store. */
    public function testCodeTypedAgainstTheInterfaceTakesADouble(): void
    {
        $releaseQuietly = static function (LockInterface $lock): bool {
            try {
                $lock->release();

                return true;
            } catch (\Throwable) {
                return false;
            }
        };
        $failing = $this->createMock(LockInterface::class);
        $failing->expects($this->once())->method('release')->willThrowException(new \Deadbolt\Exception\LockReleasingException('down'));
        $this->assertFalse($releaseQuietly($failing));

        $fine = $this->createMock(DeadlineLockInterface::class);
        $fine->expects($this->once())->method('acquire')->with(true, 2.5)->willReturn(true);
        $fine->expects($this->once())->method('release');
        $this->assertTrue($fine->acquire(true, 2.5));
        $this->assertTrue($releaseQuietly($fine));

        $real = (new LockFactory(new InMemoryStore()))->createLock('quiet');
        $this->assertTrue($real->acquire());
        $this->assertTrue($releaseQuietly($real));
        $this->assertFalse($real->isAcquired());
    }

    public function testEveryInterfaceCanBeDoubled(): void
    {
        foreach ([LockInterface::class, SharedLockInterface::class, DeadlineLockInterface::class, FencedLockInterface::class,
            PersistingStoreInterface::class, BlockingStoreInterface::class, SharedLockStoreInterface::class,
            BlockingSharedLockStoreInterface::class] as $interface) {
            $this->assertInstanceOf($interface, $this->createMock($interface));
        }
        $fenced = $this->createMock(FencedLockInterface::class);
        $fenced->method('getFencingToken')->willReturn(7);
        $this->assertSame(7, $fenced->getFencingToken());
        $store = $this->createMock(BlockingSharedLockStoreInterface::class);
        $store->expects($this->once())->method('exists')->with($this->isInstanceOf(Key::class))->willReturn(true);
        $this->assertTrue($store->exists(new Key('doubled')));
    }

    /** A PHP class may implement the interfaces with Symfony's signatures. */
    public function testAPhpClassCanImplementThem(): void
    {
        $store = new class() implements BlockingSharedLockStoreInterface, BlockingStoreInterface {
            /** @var array<string, true> */
            public array $held = [];

            public function save(Key $key): void
            {
                $this->held[(string) $key] = true;
            }

            public function saveRead(Key $key): void
            {
                $this->save($key);
            }

            public function waitAndSave(Key $key): void
            {
                $this->save($key);
            }

            public function waitAndSaveRead(Key $key): void
            {
                $this->save($key);
            }

            public function delete(Key $key): void
            {
                unset($this->held[(string) $key]);
            }

            public function exists(Key $key): bool
            {
                return isset($this->held[(string) $key]);
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
            }
        };
        $key = new Key('user-store');
        $store->save($key);
        $this->assertTrue($store->exists($key));
        $this->assertInstanceOf(PersistingStoreInterface::class, $store);
    }

    public function testLockIsStillFinalAndReflectsItsInterfaces(): void
    {
        $class = new \ReflectionClass(Lock::class);
        $this->assertTrue($class->isFinal());
        $this->assertSame([DeadlineLockInterface::class, FencedLockInterface::class, LockInterface::class, SharedLockInterface::class], (static function (array $names): array {
            sort($names);

            return $names;
        })($class->getInterfaceNames()));
    }
}
