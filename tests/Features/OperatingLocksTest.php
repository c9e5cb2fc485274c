<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Exception\InvalidArgumentException;
use Deadbolt\Exception\LockConflictedException;
use Deadbolt\Exception\LockExpiredException;
use Deadbolt\Holder;
use Deadbolt\LockFactory;
use Deadbolt\LockState;
use Deadbolt\Metrics;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;

/**
 * Operating locks (issue 29): holder records read back by another process and by symfony/lock (interop intact), the
 * forced release seen by the old holder as a lost lock with fencing tokens still growing, and `Lock::run()`.
 */
final class OperatingLocksTest extends DeadboltTestCase
{
    /** A php process that takes $resource in $store with $label, says so, and holds it until its stdin closes. */
    private const HOLDER = <<<'PHP'
        $store = $vars['redis'] !== null ? new Deadbolt\Store\RedisStore($vars['redis']) : new Deadbolt\Store\FlockStore($vars['dir']);
        $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], $vars['refresh'] ? 2.0 : 60.0, true, $vars['refresh']);
        if ($vars['label'] !== null) {
            $lock->setLabel($vars['label']);
        }
        $lock->acquire() || exit(3);
        echo json_encode(['pid' => getmypid(), 'digest' => $lock->inspect()->getHolders()[0]->getTokenDigest(), 'fence' => $lock->getFencingToken()]), "\n";
        fgets(STDIN);
        if ($vars['refresh']) {
            // The forced release reaches an auto-refreshed holder through its refresher.
            while (!$lock->isLost()) {
                usleep(10000);
            }
            echo "lost\n";
            try {
                $lock->release();
                echo "released\n";
            } catch (Deadbolt\Exception\LockExpiredException $e) {
                echo get_class($e), "\n";
            }
        }
        PHP;

    private function holder(?string $redis, ?string $dir, string $resource, ?string $label, bool $refresh = false): array
    {
        $process = PhpProcess::start(self::HOLDER, ['redis' => $redis, 'dir' => $dir, 'resource' => $resource, 'label' => $label, 'refresh' => $refresh]);
        $said = json_decode($process->readLine(), true);
        $this->assertIsArray($said, $process->stderr());

        return [$process, $said];
    }

    public function testARedisHoldersRecordIsReadBackByAnotherProcess(): void
    {
        $resource = uniqid('report:', true);
        [$process, $said] = $this->holder(SharedRedis::dsn(), null, $resource, 'nightly #7');

        $state = (new RedisStore(SharedRedis::dsn()))->inspect($resource);
        $this->assertInstanceOf(LockState::class, $state);
        $this->assertTrue($state->isHeld());
        $this->assertCount(1, $state->getHolders());
        $holder = $state->getHolders()[0];
        $this->assertInstanceOf(Holder::class, $holder);
        $this->assertSame('write', $holder->getMode());
        $this->assertSame($said['pid'], $holder->getPid());
        $this->assertSame(gethostname(), $holder->getHost());
        $this->assertSame('nightly #7', $holder->getLabel());
        $this->assertSame($said['digest'], $holder->getTokenDigest());
        $this->assertEqualsWithDelta(60.0, $holder->getExpiresAt() - $holder->getAcquiredAt(), 0.01);
        $this->assertSame([], $state->getWaiters());
        $array = $state->toArray();
        $this->assertSame(['resource', 'held', 'holders', 'waiters'], array_keys($array));
        $this->assertSame(['mode', 'tokenDigest', 'host', 'pid', 'label', 'acquiredAt', 'expiresAt'], array_keys($array['holders'][0]));

        $process->closeStdin();
        $this->assertSame(0, $process->waitForExit());
        $this->assertFalse((new RedisStore(SharedRedis::dsn()))->inspect($resource)->isHeld(), 'the record went with the lock');
    }

    public function testAFlockHolderInAnotherProcessIsShownWithItsPid(): void
    {
        $dir = $this->tempDir();
        $resource = 'myapp:prod:daily-report';
        [$process, $said] = $this->holder(null, $dir, $resource, null);

        $state = (new FlockStore($dir))->inspect($resource);
        $this->assertCount(1, $state->getHolders());
        $this->assertSame($said['pid'], $state->getHolders()[0]->getPid());
        $this->assertSame('write', $state->getHolders()[0]->getMode());
        $this->assertNull($state->getHolders()[0]->getTokenDigest(), 'the kernel knows processes, not tokens');
        $process->closeStdin();
        $this->assertSame(0, $process->waitForExit());
        $this->assertFalse((new FlockStore($dir))->inspect($resource)->isHeld());
    }

    public function testSymfonyLockStillSharesTheLockAndIsShownWithoutARecord(): void
    {
        if (!class_exists(SymfonyRedisStore::class)) {
            $this->fail('symfony/lock is missing: install php-symfony-lock (make deps does).');
        }
        $resource = uniqid('interop:', true);
        $symfony = new SymfonyLockFactory(new SymfonyRedisStore(SharedRedis::newPhpRedis()));
        $deadbolt = new LockFactory(new RedisStore(SharedRedis::dsn()));

        $mine = $deadbolt->createLock($resource, 30.0);
        $mine->setLabel('deadbolt side');
        $this->assertTrue($mine->acquire());
        $theirs = $symfony->createLock($resource, 30.0);
        $this->assertFalse($theirs->acquire(), 'a record beside the lock changes nothing for symfony/lock');
        $mine->release();
        $this->assertTrue($theirs->acquire(), 'symfony/lock takes it once released');

        $state = (new RedisStore(SharedRedis::dsn()))->inspect($resource);
        $this->assertCount(1, $state->getHolders());
        $this->assertNull($state->getHolders()[0]->getPid(), 'symfony/lock leaves no record');
        $this->assertFalse($state->getHolders()[0]->isOwnedBy(new \Deadbolt\Key($resource)));
        $this->assertFalse($mine->acquire());
        $theirs->release();
        $this->assertTrue($mine->acquire());
        $this->assertSame('deadbolt side', (new RedisStore(SharedRedis::dsn()))->inspect($resource)->getHolders()[0]->getLabel());
        $mine->release();
    }

    public function testAForcedReleaseIsSeenByTheOldHolderAsLostAndFencingKeepsGrowing(): void
    {
        $resource = uniqid('stuck:', true);
        [$process, $said] = $this->holder(SharedRedis::dsn(), null, $resource, 'stuck job', true);
        $before = Metrics::snapshot()['counters']['force_released'];

        $operator = (new LockFactory(new RedisStore(SharedRedis::dsn())))->createLock($resource, 30.0);
        $this->assertSame(1, $operator->forceRelease());
        $this->assertSame($before + 1, Metrics::snapshot()['counters']['force_released']);

        $process->closeStdin();
        $this->assertSame('lost', $process->readLine());
        $this->assertSame(LockExpiredException::class, $process->readLine());
        $this->assertSame(0, $process->waitForExit());

        $this->assertTrue($operator->acquire());
        $this->assertGreaterThan($said['fence'], $operator->getFencingToken());
        $operator->release();
    }

    /**
     * A lock without the refresher finds out at its next refresh(): lost (LockExpiredException), and release() says so
     * too. (A refresh of a lock never held, released, or past its own TTL stays symfony/lock's LockConflictedException:
     * LockLifetimeTest.)
     */
    public function testAHolderWithoutTheRefresherFindsTheLockLostAtItsNextRefresh(): void
    {
        foreach (['redis' => new RedisStore(SharedRedis::dsn()), 'flock' => new FlockStore($this->tempDir())] as $kind => $store) {
            $resource = uniqid("taken-away-$kind:", true);
            $lock = (new LockFactory($store))->createLock($resource, 30.0);
            $this->assertTrue($lock->acquire());
            $this->assertSame(1, $store->forceRelease($resource), $kind);
            try {
                $lock->refresh();
                $this->fail("$kind: refresh() of a lock released by force");
            } catch (LockExpiredException $e) {
                $this->assertStringContainsString('was lost', $e->getMessage());
            }
            $this->assertTrue($lock->isLost(), $kind);
            $this->assertFalse($lock->isAcquired(), $kind);
            try {
                $lock->release();
                $this->fail("$kind: release() of a lost lock");
            } catch (LockExpiredException) {
            }
        }
    }

    public function testRunReturnsTheWorksValueAndReleasesInEveryCase(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $lock = $factory->createLock('run', 30.0);
        $this->assertSame(42, $lock->run(fn ($held) => $held === $lock && $lock->isAcquired() ? 42 : 0));
        $this->assertFalse($lock->isAcquired());

        try {
            $lock->run(static function (): never {
                throw new \DomainException('the work failed');
            });
            $this->fail('the work\'s exception goes on');
        } catch (\DomainException $e) {
            $this->assertSame('the work failed', $e->getMessage());
        }
        $this->assertFalse($lock->isAcquired(), 'released after the work threw');

        $holder = $factory->createLock('run', 30.0);
        $this->assertTrue($holder->acquire());
        $ran = false;
        try {
            $lock->run(function () use (&$ran) {
                $ran = true;
            }, 0.05);
            $this->fail('a held lock is a conflict');
        } catch (LockConflictedException $e) {
            $this->assertStringContainsString('"run"', $e->getMessage());
            $this->assertStringContainsString('the work was not run', $e->getMessage());
        }
        $this->assertFalse($ran);
    }

    /** Laravel's restoreLock($name, $owner)->release(): through the serialized Key, token-checked. */
    public function testAnotherProcessReleasesByTheSerializedKeyOnlyWithItsToken(): void
    {
        $resource = uniqid('handed:', true);
        $result = PhpProcess::run(<<<'PHP'
            $key = new Deadbolt\Key($vars['resource']);
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLockFromKey($key, 60.0, false);
            $lock->acquire() || exit(3);
            echo serialize($key);
            PHP, ['resource' => $resource, 'dsn' => SharedRedis::dsn()]);
        $this->assertSame(0, $result['exit'], $result['stderr']);
        $factory = new LockFactory(new RedisStore(SharedRedis::dsn()));
        $store = new RedisStore(SharedRedis::dsn());

        $stranger = $factory->createLockFromKey(new \Deadbolt\Key($resource));
        $stranger->release();
        $this->assertTrue($store->inspect($resource)->isHeld(), 'a Key without the token releases nothing');

        $restored = unserialize($result['stdout']);
        $this->assertTrue($store->inspect($resource)->getHolders()[0]->isOwnedBy($restored));
        $factory->createLockFromKey($restored)->release();
        $this->assertFalse($store->inspect($resource)->isHeld());
    }

    public function testALabelMustBeOneLineOfBoundedText(): void
    {
        $lock = (new LockFactory(new InMemoryStore()))->createLock('labelled');
        foreach (["two\nlines", str_repeat('x', 129)] as $bad) {
            try {
                $lock->setLabel($bad);
                $this->fail('refused: '.json_encode($bad));
            } catch (InvalidArgumentException $e) {
                $this->assertStringContainsString('Use a job or request id', $e->getMessage());
            }
        }
        $lock->setLabel('job 42');
        $this->assertTrue($lock->acquire());
        $this->assertSame('job 42', $lock->inspect()->getHolders()[0]->getLabel());
        $this->assertFalse($lock->inspect()->getHolders()[0]->isOwnedBy(new \Deadbolt\Key('labelled')), 'another Key is another owner');
    }
}
