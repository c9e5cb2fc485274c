<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\Store\InMemoryStore;

/**
 * InMemoryStore earns the shared-lock suite. Its locks live in one store object of one process, so the
 * cross-process blocking suite does not apply.
 */
final class InMemoryStoreTest extends StoreContractTestCase
{
    use NeverExpiringStoreTestTrait;
    use SharedStoreTestTrait;

    private ?InMemoryStore $store = null;

    protected function getStore(): object
    {
        return $this->store ??= new InMemoryStore();
    }

    public function testLocksLiveInTheirStoreInstanceOnly(): void
    {
        $resource = uniqid(__METHOD__, true);
        $first = new Key($resource);
        $second = new Key($resource);

        $store = new InMemoryStore();
        $other = new InMemoryStore();
        $store->save($first);

        $other->save($second);

        $this->assertTrue($store->exists($first));
        $this->assertTrue($other->exists($second));
        $this->assertFalse($other->exists($first));
    }

    public function testWaitAndSaveReturnsAtOnceWhenTheLockIsFree(): void
    {
        $store = new InMemoryStore();
        $key = new Key(uniqid(__METHOD__, true));

        $store->waitAndSave($key);

        $this->assertTrue($store->exists($key));
    }

    public function testWaitAndSaveReadReturnsAtOnceBesideAnotherReader(): void
    {
        $store = new InMemoryStore();
        $resource = uniqid(__METHOD__, true);
        $reader = new Key($resource);
        $store->saveRead($reader);
        $key = new Key($resource);

        $store->waitAndSaveRead($key);

        $this->assertTrue($store->exists($key));
        $this->assertTrue($store->exists($reader));
    }
}
