<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Store;

use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Features\RecordingLogger;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * `release=deferred` on a DSN: release() writes its script and returns; the reply is read before the connection's
 * next command, at the end of the request and at exit. Replies must never be taken for one another, the release
 * must reach Redis at once (the next waiter is not kept waiting), and a release that fails is reported at the
 * lock's next call.
 */
final class RedisDeferredReleaseTest extends DeadboltTestCase
{
    private static function factory(string $suffix = ''): LockFactory
    {
        return new LockFactory(new RedisStore(SharedRedis::dsn('/5?release=deferred'.$suffix)));
    }

    /** A connection of its own on the test's database (the shared inspection client stays on its own). */
    private static function inspector(): \Redis
    {
        $redis = new \Redis();
        $redis->connect('127.0.0.1', SharedRedis::port());
        $redis->select(5);

        return $redis;
    }

    private static function resource(string $what): string
    {
        return 'deferred-'.$what.'-'.bin2hex(random_bytes(6));
    }

    /**
     * A release's reply (1) read as the answer of a later isAcquired() would say true for a lock nobody holds;
     * a later acquire's reply read as the release's would lose the acquire.
     */
    public function testRepliesStayInOrderAcrossDeferredReleasesAndLaterCommands(): void
    {
        $factory = self::factory();
        $inspector = self::inspector();
        [$a, $b, $free] = [self::resource('a'), self::resource('b'), self::resource('free')];
        for ($i = 0; $i < 50; ++$i) {
            $lockA = $factory->createLock($a, 30.0);
            $lockB = $factory->createLock($b, 30.0);
            $this->assertTrue($lockA->acquire(false), "round $i: a");
            $lockA->release();
            $this->assertFalse($factory->createLock($free, 30.0)->isAcquired(), "round $i: nobody holds it");
            $this->assertTrue($lockB->acquire(false), "round $i: b");
            $lockA->release();
            $this->assertTrue($lockB->isAcquired(), "round $i: b is held");
            $lockB->refresh(20.0);
            $lockB->release();
            $lockB->release();
            $this->assertFalse($lockA->isAcquired(), "round $i: a is not held");
        }
        $this->assertSame(0, $inspector->exists($a, $b));
    }

    /**
     * The server forgets its scripts (SCRIPT FLUSH, a restart) while a release is on its way: the release that met
     * NOSCRIPT runs again once the replies are read, the script behind it too, and nothing is left held.
     */
    public function testAReleaseThatMeetsAFlushedScriptCacheRunsAgain(): void
    {
        $factory = self::factory();
        $inspector = self::inspector();
        [$a, $b] = [self::resource('flush-a'), self::resource('flush-b')];
        for ($i = 0; $i < 20; ++$i) {
            $lockA = $factory->createLock($a, 30.0);
            $this->assertTrue($lockA->acquire(false), "round $i: a");
            $lockA->release();
            $inspector->script('flush');
            $lockB = $factory->createLock($b, 30.0);
            $this->assertTrue($lockB->acquire(false), "round $i: b");
            $this->assertSame(0, $inspector->exists($a), "round $i: a was released");
            $lockB->release();
            $this->assertFalse($lockB->isAcquired(), "round $i: b was released");
        }
        $this->assertSame(0, $inspector->exists($a, $b));
    }

    /**
     * Only the reply is put off: the release itself reaches Redis at once, while the process that sent it does
     * nothing more.
     */
    public function testTheReleaseReachesRedisBeforeItsReplyIsRead(): void
    {
        $resource = self::resource('reaches');
        $holder = $this->spawn(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
            echo $lock->acquire(false) ? "held\n" : "refused\n";
            fgets(STDIN);
            $lock->release();
            echo "released\n";
            fgets(STDIN);
            PHP, ['dsn' => SharedRedis::dsn('/5?release=deferred'), 'resource' => $resource]);
        $this->assertSame('held', $holder->readLine());
        $this->assertFalse(self::factory()->createLock($resource, 30.0)->acquire(false));

        $holder->writeLine('release');
        $this->assertSame('released', $holder->readLine());
        // The release travels on the holder's connection, the check on another: Redis may serve the check first,
        // so the check waits (bounded) for the key to go while the holder does nothing but wait on its stdin. A
        // release left in a buffer until the holder's next command never arrives, and the wait runs out.
        $inspector = self::inspector();
        $deadline = microtime(true) + 10.0;
        while (1 === $inspector->exists($resource) && microtime(true) < $deadline) {
            usleep(1_000);
        }
        $lock = self::factory()->createLock($resource, 30.0);
        $this->assertTrue($lock->acquire(false), 'released in Redis while the holder waits on its stdin');
        $lock->release();
        $holder->closeStdin();
        $this->assertSame(0, $holder->waitForExit());
    }

    /**
     * A child forked with a reply pending on its parent's connection opens its own, and the parent reads its
     * reply later in step.
     */
    public function testAForkWithAReplyPendingKeepsParentAndChildInStep(): void
    {
        $factory = self::factory();
        [$a, $free] = [self::resource('fork'), self::resource('fork-free')];
        $lock = $factory->createLock($a, 30.0);
        $this->assertTrue($lock->acquire(false));
        $lock->release();

        $child = $this->fork(static function (Channel $parent) use ($factory, $a, $free): void {
            $mine = $factory->createLock($a, 30.0);
            $answers = [
                $factory->createLock($free, 30.0)->isAcquired() ? 'held' : 'free',
                $mine->acquire(false) ? 'acquired' : 'refused',
                $mine->isAcquired() ? 'held' : 'free',
            ];
            $mine->release();
            $parent->send(implode(',', $answers));
        });
        $this->assertSame('free,acquired,held', $child->receive());
        $child->wait();

        $this->assertFalse($factory->createLock($free, 30.0)->isAcquired());
        $this->assertTrue($lock->acquire(false));
        $this->assertTrue($lock->isAcquired());
        $lock->release();
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function endings(): iterable
    {
        yield 'the script ends' => [''];
        yield 'exit()' => ['exit(0);'];
        yield 'a fatal error' => ['trigger_error("fatal", E_USER_ERROR);'];
    }

    /**
     * The request ends (or the process exits) with the release's reply unread: it is read then, and nothing is
     * left held or reported.
     *
     * @dataProvider endings
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('endings')]
    public function testTheRequestEndsWithAReplyPending(string $ending): void
    {
        $resource = self::resource('end');
        $result = PhpProcess::run(<<<'PHP'
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 300.0);
            $lock->acquire();
            $lock->release();
            echo "released\n";
            PHP.$ending, ['dsn' => SharedRedis::dsn('/5?release=deferred'), 'resource' => $resource]);

        $this->assertSame("released\n", $result['stdout']);
        $this->assertStringNotContainsString('Deadbolt', $result['stderr']);
        $inspector = self::inspector();
        $this->assertSame(0, $inspector->exists($resource));
    }

    /**
     * The server refuses the release (the user lost EVALSHA after acquiring): release() has returned, so the
     * failure is logged at the lock's next call, counted as a store error, and the lock is still held in Redis
     * (as after a failed synchronous release) until it is released again.
     */
    public function testAFailedDeferredReleaseIsReportedAtTheLocksNextCall(): void
    {
        $server = RedisServer::start(['requirepass' => 'admin-secret']);
        try {
            $admin = $server->client('admin-secret');
            $admin->rawCommand('ACL', 'SETUSER', 'app', 'reset', 'on', '>app-secret', '~*', '&*', '+@all');
            $factory = new LockFactory(new RedisStore($server->dsn('?release=deferred', 'app:app-secret')));
            $resource = self::resource('refused');
            $lock = $factory->createLock($resource, 60.0);
            $logger = new RecordingLogger();
            $lock->setLogger($logger);
            $this->assertTrue($lock->acquire(false));
            $errorsBefore = \Deadbolt\Metrics::snapshot()['counters']['store_errors'];

            $admin->rawCommand('ACL', 'SETUSER', 'app', '-evalsha');
            $admin->rawCommand('ACL', 'LOG', 'RESET');
            $lock->release();
            // The release went out on another connection than the admin's: only once Redis has refused it (its
            // ACL log says so) may EVALSHA come back, or Redis could run the release after the grant.
            $deadline = microtime(true) + 30.0;
            while ([] === $admin->rawCommand('ACL', 'LOG')) {
                $this->assertLessThan($deadline, microtime(true), 'Redis never refused the release');
                usleep(1_000);
            }
            $admin->rawCommand('ACL', 'SETUSER', 'app', '+evalsha');
            $this->assertSame(1, $admin->exists($resource), 'the refused release left the lock in Redis');
            $this->assertTrue($lock->acquire(false), 'the token still holds it');

            $failures = array_values(array_filter(
                $logger->records,
                static fn (array $r): bool => str_starts_with($r[1], 'Failed to release'),
            ));
            $this->assertCount(1, $failures, 'reported once, at the next call');
            $this->assertSame('notice', $failures[0][0]);
            $this->assertInstanceOf(\Deadbolt\Exception\LockReleasingException::class, $failures[0][2]['exception']);
            $chain = '';
            for ($e = $failures[0][2]['exception']; null !== $e; $e = $e->getPrevious()) {
                $chain .= $e->getMessage()."\n";
            }
            $this->assertStringContainsString('NOPERM', $chain);
            $this->assertStringNotContainsString('app-secret', print_r($logger->records, true));
            $this->assertSame($errorsBefore + 1, \Deadbolt\Metrics::snapshot()['counters']['store_errors']);
            $lock->release();
            $this->assertFalse($lock->isAcquired());
            $this->assertSame(0, $admin->exists($resource));
        } finally {
            $server->stop();
        }
    }

    public function testAnUnknownReleaseModeIsRefusedByName(): void
    {
        $this->expectException(\Deadbolt\Exception\InvalidArgumentException::class);
        $this->expectExceptionMessage('release must be "sync" or "deferred", not "later"');
        new RedisStore(SharedRedis::dsn('?release=later'));
    }
}
