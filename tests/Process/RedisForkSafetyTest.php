<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Key;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * After pcntl_fork(), a Redis lock inherited by the child is inert, and the child never touches the parent's
 * connection: it opens its own. Judges: a fresh php process, Redis itself (ZSCORE of the parent's token) and the
 * server's CLIENT LIST (which connection belongs to which process).
 */
final class RedisForkSafetyTest extends DeadboltTestCase
{
    /** A database of its own: the connections of this DSN are easy to find in CLIENT LIST. */
    private const DB = 12;

    private \Redis $inspector;

    private int $inspectorId;

    protected function setUp(): void
    {
        $this->inspector = SharedRedis::newPhpRedis();
        $this->inspector->select(self::DB);
        $this->inspectorId = (int) $this->inspector->rawCommand('CLIENT', 'ID');
    }

    protected function tearDown(): void
    {
        $this->inspector->close();
    }

    /**
     * @return iterable<string, array{'acquire'|'acquireRead'}>
     */
    public static function modes(): iterable
    {
        yield 'write lock' => ['acquire'];
        yield 'read lock' => ['acquireRead'];
    }

    /**
     * @dataProvider modes
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modes')]
    public function testTheChildCannotReleaseTheParentsLockAndWorksOnAConnectionOfItsOwn(string $mode): void
    {
        $dsn = self::dsn();
        $resource = uniqid(__METHOD__, true);
        $factory = new LockFactory(new RedisStore($dsn));
        $key = new Key($resource);
        $lock = $factory->createLockFromKey($key, 300.0, true);
        $this->assertTrue($lock->$mode());
        $token = $key->__serialize()['token'];
        $parentIds = $this->connectionsOf(posix_getpid());
        $this->assertCount(1, $parentIds, 'the parent has one connection for this DSN');

        $child = $this->fork(function (Channel $parent) use ($lock, $factory, $resource, $parentIds): void {
            $this->assertFalse($lock->isAcquired(), 'an inherited lock is not acquired in the child');
            $lock->release();
            $own = $factory->createLock($resource.':child', 30.0);
            $this->assertTrue($own->acquire(), 'the child locks another resource through the inherited store');
            $childIds = array_values(array_diff($this->connectionsOf(posix_getpid()), $parentIds));
            $this->assertCount(1, $childIds, 'the child opened one connection of its own');
            $parent->send((string) $childIds[0]);
            $own->release();
            // Leaving: exit() destroys the child's copies of the Lock (autoRelease on), the factory and the store.
        });
        $childId = (int) $child->receive();
        $child->wait();

        $this->assertNotContains($childId, $parentIds, 'the child\'s CLIENT ID differs from the parent\'s');
        $this->assertNotFalse($this->inspector->zScore($resource, $token), 'the parent\'s token is still in Redis');
        $this->assertFalse(self::canAcquire($dsn, $resource), 'a fresh process cannot take the lock');
        $this->assertTrue($lock->isAcquired(), 'the parent still holds its lock');
        $lock->refresh();
        $this->assertSame($parentIds, $this->connectionsOf(posix_getpid()), 'the parent still uses the same connection');
        $this->assertSame(0, $this->inspector->exists($resource.':child'), 'the child released its own lock');
        $lock->release();
        $this->assertTrue(self::canAcquire($dsn, $resource), 'free after the parent released');
    }

    public function testAnInheritedLockStartsAFreshOwnershipInTheChild(): void
    {
        $dsn = self::dsn();
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 300.0);
        $lock->acquire();

        $child = $this->fork(function (Channel $parent) use ($lock): void {
            $this->assertFalse($lock->acquire(false), 'the parent holds it: the child\'s fresh ownership is refused');
            $parent->send('refused');
            $this->assertSame('released', $parent->receive());
            $this->assertTrue($lock->acquire(false), 'the child acquires the inherited lock for itself');
            $parent->send('holding');
            $this->assertSame('release', $parent->receive());
            $lock->release();
            $this->assertFalse($lock->isAcquired());
            $parent->send('released');
        });
        $this->assertSame('refused', $child->receive());
        $this->assertTrue($lock->isAcquired(), 'the child\'s attempt left the parent holding');
        $lock->release();
        $child->send('released');

        $this->assertSame('holding', $child->receive());
        $this->assertFalse($lock->isAcquired(), 'the child\'s ownership is not the parent\'s');
        $this->assertFalse($lock->acquire(false), 'the child\'s lock excludes the parent');
        $this->assertFalse(self::canAcquire($dsn, $resource));
        $child->send('release');
        $this->assertSame('released', $child->receive());
        $child->wait();
        $this->assertTrue(self::canAcquire($dsn, $resource), 'the child\'s release freed it');
    }

    public function testTheChildExitingWhileTheParentHoldsLeavesTheLockHeld(): void
    {
        $dsn = self::dsn();
        $resource = uniqid(__METHOD__, true);
        $factory = new LockFactory(new RedisStore($dsn));
        $lock = $factory->createLock($resource, 300.0);
        $lock->acquire();
        $parentIds = $this->connectionsOf(posix_getpid());

        // The child's shutdown destroys its copies of the factory, the store and the lock.
        $child = $this->fork(static function (Channel $parent) use ($factory, $lock): void {
            unset($factory, $lock);
            exit(0);
        });
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertFalse(self::canAcquire($dsn, $resource));
        $this->assertSame($parentIds, $this->connectionsOf(posix_getpid()));
    }

    public function testAKeySerializedInAnotherProcessIsRefreshedAndReleasedHere(): void
    {
        $dsn = self::dsn();
        $resource = uniqid(__METHOD__, true);
        $result = PhpProcess::run(<<<'PHP'
            $key = new Deadbolt\Key($vars['resource']);
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLockFromKey($key, 20.0, false);
            if (!$lock->acquire()) {
                exit(3);
            }
            echo base64_encode(serialize($key));
            PHP, ['dsn' => $dsn, 'resource' => $resource]);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertFalse(self::canAcquire($dsn, $resource), 'the lock outlived its process (no auto-release)');
        $key = unserialize(base64_decode($result['stdout'], true));
        $this->assertInstanceOf(Key::class, $key);
        $lock = (new LockFactory(new RedisStore($dsn)))->createLockFromKey($key, 120.0);

        $this->assertTrue($lock->isAcquired(), 'the moved Key owns the lock here');
        $lock->refresh();
        $this->assertGreaterThan(20_000, $this->inspector->pttl($resource), 'refreshed to 120 s');
        $lock->release();

        $this->assertSame(0, $this->inspector->exists($resource));
        $this->assertTrue(self::canAcquire($dsn, $resource));
    }

    /**
     * A Key inherited through fork() and waited on through the store API (waitAndSave) is the child's own before the
     * wait starts, so the child queues under the token it will hold the lock with, and the parent's release hands
     * the lock over to it: the child's wait reads the hand-over from its grant list. Before, the child waited on a
     * list named after the parent's token while the release granted to its new one: it found the lock only at its
     * next poll, and the hand-over's signal was left unread in Redis.
     */
    public function testAnInheritedKeyWaitingThroughTheStoreIsHandedTheLockByARelease(): void
    {
        $store = new RedisStore(self::dsn());
        $resource = 'inherited-wait-'.bin2hex(random_bytes(6));
        $key = new Key($resource);
        $store->save($key);

        $child = $this->fork(static function (Channel $parent) use ($store, $key): void {
            $store->waitAndSave($key);
            $parent->send($store->exists($key) ? 'held' : 'not held');
            $store->delete($key);
        });
        $queue = $resource.'#deadbolt:queue{'.$resource.'}';
        $deadline = microtime(true) + 30.0;
        while (0 === $this->inspector->zCard($queue)) {
            $this->assertLessThan($deadline, microtime(true), 'the child never joined the queue');
            usleep(2_000);
        }
        $store->delete($key);

        $this->assertSame('held', $child->receive(), 'the child got the lock the parent released');
        $child->wait();
        $this->assertSame([], $this->inspector->keys($queue.':*'), 'no hand-over was left unread');
        $this->assertSame(0, $this->inspector->exists($resource), 'the child released it');
    }

    /**
     * A Key inherited through fork() does not export its parent's token: serialized in the child, it carries a
     * token of its own, so a Lock made from it there cannot release the parent's lock.
     */
    public function testAnInheritedKeySerializedInTheChildCannotReleaseTheParentsLock(): void
    {
        $dsn = self::dsn();
        $resource = 'inherited-export-'.bin2hex(random_bytes(6));
        $factory = new LockFactory(new RedisStore($dsn));
        $key = new Key($resource);
        $lock = $factory->createLockFromKey($key, 60.0);
        $this->assertTrue($lock->acquire());
        $parentToken = $key->__serialize()['token'];

        $child = $this->fork(static function (Channel $parent) use ($factory, $key): void {
            $exported = unserialize(serialize($key));
            $factory->createLockFromKey($exported, 60.0)->release();
            $parent->send($exported->__serialize()['token']);
        });
        $childToken = $child->receive();
        $child->wait();

        $this->assertNotSame($parentToken, $childToken, 'the child exported a token of its own');
        $this->assertTrue($lock->isAcquired(), 'the parent still holds its lock');
        $this->assertFalse(self::canAcquire($dsn, $resource));
        $lock->release();
    }

    private static function dsn(): string
    {
        return SharedRedis::dsn('/'.self::DB);
    }

    /**
     * @return list<int> the client ids of the connections process $pid has open to this DSN's database (the test's
     *                   own inspection connection left out)
     */
    private function connectionsOf(int $pid): array
    {
        $ids = SharedRedis::clientIdsOfProcess(SharedRedis::client(), $pid, SharedRedis::port(), self::DB);

        return array_values(array_diff($ids, [$this->inspectorId]));
    }

    /**
     * Asks a fresh php process whether it can take the lock right now (non-blocking), then lets it exit.
     */
    private static function canAcquire(string $dsn, string $resource): bool
    {
        $result = PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
            echo $lock->acquire(false) ? 'acquired' : 'refused';
            PHP, ['dsn' => $dsn, 'resource' => $resource]);
        if (0 !== $result['exit'] || !\in_array($result['stdout'], ['acquired', 'refused'], true)) {
            throw new \PHPUnit\Framework\AssertionFailedError(sprintf(
                "The probe process failed (exit %d).\nstdout: %s\nstderr: %s",
                $result['exit'],
                $result['stdout'],
                $result['stderr']
            ));
        }

        return 'acquired' === $result['stdout'];
    }
}
