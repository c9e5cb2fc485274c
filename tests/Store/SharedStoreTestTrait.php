<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;

/**
 * For stores with read (shared) locks: saveRead() and the promotion/demotion rules.
 */
trait SharedStoreTestTrait
{
    abstract protected function getStore(): object;

    public function testReadersCoexist(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $readers = [new Key($resource), new Key($resource), new Key($resource)];

        foreach ($readers as $reader) {
            $store->saveRead($reader);
        }

        foreach ($readers as $i => $reader) {
            $this->assertTrue($store->exists($reader), "reader $i");
        }
    }

    public function testAWriterExcludesReaders(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $writer = new Key($resource);
        $reader = new Key($resource);
        $store->save($writer);

        try {
            $store->saveRead($reader);
            $this->fail('A reader got in while a writer holds the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($writer));
        $this->assertFalse($store->exists($reader));
    }

    public function testAReaderExcludesWriters(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $reader = new Key($resource);
        $writer = new Key($resource);
        $store->saveRead($reader);

        try {
            $store->save($writer);
            $this->fail('A writer got in while a reader holds the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($reader));
        $this->assertFalse($store->exists($writer));
    }

    public function testAWriterGetsInOnceTheLastReaderLeft(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);
        $writer = new Key($resource);
        $store->saveRead($first);
        $store->saveRead($second);

        $store->delete($first);
        try {
            $store->save($writer);
            $this->fail('A writer got in while one reader still holds the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }
        $store->delete($second);
        $store->save($writer);

        $this->assertTrue($store->exists($writer));
    }

    public function testTheSoleReaderIsPromotedToWriter(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $other = new Key($resource);
        $store->saveRead($key);

        $store->save($key);

        $this->assertTrue($store->exists($key));
        try {
            $store->saveRead($other);
            $this->fail('A reader got in after the promotion to writer.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }
        $this->assertFalse($store->exists($other));
    }

    public function testPromotionIsRefusedWhileAnotherReaderHolds(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);
        $store->saveRead($first);
        $store->saveRead($second);

        try {
            $store->save($first);
            $this->fail('A reader was promoted to writer while another reader holds the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $this->assertTrue($store->exists($second), 'the other reader keeps its lock');
    }

    public function testAWriterIsDemotedToReader(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);
        $reader = new Key($resource);
        $store->save($key);

        $store->saveRead($key);
        $store->saveRead($reader);

        $this->assertTrue($store->exists($key));
        $this->assertTrue($store->exists($reader));
        try {
            $store->save(new Key($resource));
            $this->fail('A writer got in while two readers hold the lock.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }
    }

    public function testSavingReadTwiceWithTheSameKeyKeepsOneReadLock(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);

        $store->saveRead($key);
        $store->saveRead($key);
        $store->delete($key);

        $this->assertFalse($store->exists($key));
        $writer = new Key($resource);
        $store->save($writer);
        $this->assertTrue($store->exists($writer), 'one delete releases a read lock saved twice');
    }
}
