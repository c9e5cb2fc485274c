<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Key;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\ForkedChild;

/**
 * For blocking stores whose readers share a lock (BlockingStoreTestTrait's stores but SemaphoreStore, whose read locks
 * are exclusive): a reader does not wait for another process's reader.
 */
trait BlockingSharedStoreTestTrait
{
    abstract protected function getStore(): object;

    abstract protected function fork(callable $body): ForkedChild;

    public function testWaitAndSaveReadDoesNotWaitForAReaderInAnotherProcess(): void
    {
        $store = $this->getStore();
        $resource = uniqid(__METHOD__, true);
        $child = $this->fork(function (Channel $parent) use ($store, $resource): void {
            $store = $this->storeInAChild($store);
            $key = new Key($resource);
            $store->saveRead($key);
            $parent->send('holding');
            // The parent's waitAndSaveRead() must return while this read lock is held.
            $this->assertSame('done', $parent->receive(60.0));
            $this->assertTrue($store->exists($key));
            $store->delete($key);
        });
        $this->assertSame('holding', $child->receive());

        $key = new Key($resource);
        $store->waitAndSaveRead($key);
        $child->send('done');
        $child->wait();

        $this->assertTrue($store->exists($key));
    }
}
