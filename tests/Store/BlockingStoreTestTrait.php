<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Key;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\ForkedChild;

/**
 * For stores that can wait for a lock held by another process: waitAndSave() and waitAndSaveRead(). A store whose
 * readers share a lock adds BlockingSharedStoreTestTrait.
 *
 * The other process is a pcntl_fork() child; the steps are ordered by messages on a socket pair, never by sleeps.
 */
trait BlockingStoreTestTrait
{
    abstract protected function getStore(): object;

    abstract protected function fork(callable $body): ForkedChild;

    public function testWaitAndSaveWaitsForAReleaseByAnotherProcess(): void
    {
        $this->assertWaitsForTheChild(uniqid(__METHOD__, true), 'save', 'waitAndSave');
    }

    public function testWaitAndSaveWaitsForAReaderInAnotherProcess(): void
    {
        $this->assertWaitsForTheChild(uniqid(__METHOD__, true), 'saveRead', 'waitAndSave');
    }

    public function testWaitAndSaveReadWaitsForAWriterInAnotherProcess(): void
    {
        $this->assertWaitsForTheChild(uniqid(__METHOD__, true), 'save', 'waitAndSaveRead');
    }

    public function testWaitAndSaveReturnsAtOnceWhenTheLockIsFree(): void
    {
        $store = $this->getStore();
        $key = new Key(uniqid(__METHOD__, true));

        $store->waitAndSave($key);

        $this->assertTrue($store->exists($key));
    }

    /**
     * The child takes the lock with $childSave, the parent asks for it with $parentWait, and the child releases only
     * after the parent announced its wait (and, best effort, after the kernel shows the parent sleeping).
     */
    private function assertWaitsForTheChild(string $resource, string $childSave, string $parentWait): void
    {
        $store = $this->getStore();
        $parentPid = posix_getpid();
        $child = $this->fork(function (Channel $parent) use ($store, $resource, $childSave, $parentPid): void {
            $store = $this->storeInAChild($store);
            $key = new Key($resource);
            $store->$childSave($key);
            $parent->send('holding');
            $this->assertSame('waiting', $parent->receive());
            self::waitUntilSleeping($parentPid);
            $this->assertTrue($store->exists($key), 'the child still holds the lock when it releases it');
            $store->delete($key);
            $parent->send('released');
        });
        $this->assertSame('holding', $child->receive());

        $key = new Key($resource);
        try {
            'waitAndSave' === $parentWait ? $store->save($key) : $store->saveRead($key);
            $this->fail('The parent took the lock that the child holds.');
        } catch (LockConflictedException $e) {
            $this->addToAssertionCount(1);
        }

        $child->send('waiting');
        $store->$parentWait($key);

        $this->assertSame('released', $child->receive(), 'the parent got the lock only after the child released it');
        $this->assertTrue($store->exists($key));
        $child->wait();
    }
}
