<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\PersistingStoreInterface;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * Deadbolt's objects in reference cycles are collected by PHP's cycle collector, and a Lock collected while held is
 * released, as symfony/lock's is. Issue 25, items 9 and 10: no get_gc handler showed the collector what a Lock, a
 * LockFactory or a Key holds, so such cycles lived (and held their locks) until the process exited.
 */
final class GarbageCycleTest extends DeadboltTestCase
{
    public function testALockInACycleWithItsLoggerIsCollectedAndReleased(): void
    {
        $dir = $this->tempDir();
        $logger = new class() extends \Psr\Log\AbstractLogger {
            public ?object $lock = null;

            public function log($level, $message, array $context = []): void
            {
            }
        };
        $lock = (new LockFactory(new FlockStore($dir)))->createLock('cycle-logger');
        $lock->setLogger($logger);
        $logger->lock = $lock;
        $this->assertTrue($lock->acquire());
        $weak = \WeakReference::create($lock);
        unset($lock, $logger);

        $this->assertFalse(PhpProcess::canAcquire($dir, 'cycle-logger'), 'held while the cycle lives');
        gc_collect_cycles();
        $this->assertNull($weak->get(), 'the Lock was collected');
        $this->assertTrue(PhpProcess::canAcquire($dir, 'cycle-logger'), 'and its lock released');
    }

    public function testALockInACycleWithAStoreWrittenInPhpIsCollectedAndReleased(): void
    {
        $store = new class() implements PersistingStoreInterface {
            /** @var list<object> */
            public array $locks = [];
            public array $held = [];

            public function save(Key $key): void
            {
                $this->held[(string) $key] = true;
            }

            public function delete(Key $key): void
            {
                unset($this->held[(string) $key]);
                $GLOBALS['deadbolt_cycle_released'] = true;
            }

            public function exists(Key $key): bool
            {
                return isset($this->held[(string) $key]);
            }

            public function putOffExpiration(Key $key, float $ttl): void
            {
            }
        };
        $GLOBALS['deadbolt_cycle_released'] = false;
        $lock = (new LockFactory($store))->createLock('cycle-store');
        $store->locks[] = $lock;
        $this->assertTrue($lock->acquire());
        $weakLock = \WeakReference::create($lock);
        $weakStore = \WeakReference::create($store);
        unset($lock, $store);

        gc_collect_cycles();
        $this->assertNull($weakLock->get(), 'the Lock was collected');
        $this->assertNull($weakStore->get(), 'and its store');
        $this->assertTrue($GLOBALS['deadbolt_cycle_released'], 'the lock was released through the store');
    }

    public function testAKeyInItsOwnStateOrInAnothersIsCollected(): void
    {
        $self = new Key('cycle-self');
        $self->setState('me', $self);
        $a = new Key('cycle-a');
        $b = new Key('cycle-b');
        $a->setState('other', $b);
        $b->setState('other', $a);
        $weak = array_map(\WeakReference::create(...), [$self, $a, $b]);
        unset($self, $a, $b);

        gc_collect_cycles();
        foreach ($weak as $i => $reference) {
            $this->assertNull($reference->get(), "key $i was collected");
        }
    }

    public function testKeysInCyclesDoNotGrowMemory(): void
    {
        $make = static function (): void {
            for ($i = 0; $i < 2_000; ++$i) {
                $key = new Key('cycle-many');
                $key->setState('me', $key);
            }
        };
        $make();
        gc_collect_cycles();
        $before = memory_get_usage();
        for ($round = 0; $round < 10; ++$round) {
            $make();
            gc_collect_cycles();
        }
        $this->assertLessThan(1_000_000, memory_get_usage() - $before, '20,000 keys in cycles, collected');
    }
}
