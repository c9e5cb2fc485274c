<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Issue 29 part 6: a `\Redis` or Predis client connected in a parent and used by a pcntl_fork() child through Deadbolt
 * (webman's master opening its pool before it forks the workers). Both processes hold one connection and would read
 * each other's replies; the child is refused before anything is sent, with what to do instead. A client the child
 * connected itself, reconnected, or holds alone is never refused. Judges: the exception, and the server's CLIENT LIST
 * (the shared connection's last command: nothing was sent on it by the child).
 */
final class LentClientAcrossForkTest extends DeadboltTestCase
{
    /**
     * @return iterable<string, array{'phpredis'|'predis', bool}>
     */
    public static function clientsConnectedInTheParent(): iterable
    {
        yield '\Redis, used through Deadbolt in the parent' => ['phpredis', true];
        yield '\Redis, only connected in the parent' => ['phpredis', false];
        yield 'Predis, used through Deadbolt in the parent' => ['predis', true];
        yield 'Predis, only connected in the parent' => ['predis', false];
    }

    /**
     * @return iterable<string, array{'phpredis'|'predis'}>
     */
    public static function clients(): iterable
    {
        yield '\Redis' => ['phpredis'];
        yield 'Predis' => ['predis'];
    }

    /**
     * @dataProvider clientsConnectedInTheParent
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('clientsConnectedInTheParent')]
    public function testAClientConnectedBeforeForkIsRefusedInTheChildWithWhatToDo(string $kind, bool $usedInParent): void
    {
        $client = self::connect($kind);
        $resource = uniqid(__METHOD__, true);
        if ($usedInParent) {
            $lock = (new LockFactory(new RedisStore($client)))->createLock($resource, 30.0, false);
            $this->assertTrue($lock->acquire(false));
            $lock->release();
        } else {
            self::ping($client);
        }
        $id = self::clientId($client);
        $lastCommand = self::lastCommand($id);
        $parentPid = posix_getpid();

        $child = $this->fork(function (Channel $parent) use ($client, $resource): void {
            $lock = (new LockFactory(new RedisStore($client)))->createLock($resource, 30.0, false);
            try {
                $lock->acquire(false);
                $this->fail('acquire() through a client connected before fork() must be refused');
            } catch (LockAcquiringException $e) {
                // The store's LockStorageException says why.
                $this->assertInstanceOf(\Deadbolt\Exception\LockStorageException::class, $e->getPrevious());
                $parent->send($e->getPrevious()->getMessage());
            }
        });
        $message = $child->receive();
        $child->wait();

        $this->assertStringContainsString('was connected before fork()', $message);
        $this->assertStringContainsString("process $parentPid", $message);
        $this->assertStringContainsString('onWorkerStart', $message);
        $this->assertStringContainsString('DSN', $message);
        $this->assertSame($lastCommand, self::lastCommand($id), 'the child sent nothing on the shared connection');
        $this->assertSame(0, SharedRedis::client()->exists($resource));
        // The parent's client is intact.
        $lock = (new LockFactory(new RedisStore($client)))->createLock($resource, 30.0, false);
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    /**
     * The child's own client works, even beside the inherited one (still open in both processes, to the same server).
     *
     * @dataProvider clients
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('clients')]
    public function testAClientTheChildConnectsItselfLocks(string $kind): void
    {
        $inherited = self::connect($kind);
        self::ping($inherited);
        $child = $this->fork(function () use ($kind, $inherited): void {
            $this->assertLocks(self::connect($kind));
            unset($inherited);
        });
        $child->wait();
        self::ping($inherited);
    }

    /**
     * @dataProvider clients
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('clients')]
    public function testAChildThatReconnectsTheInheritedClientLocks(string $kind): void
    {
        $client = self::connect($kind);
        self::ping($client);
        $child = $this->fork(function () use ($kind, $client): void {
            if ('phpredis' === $kind) {
                $client->connect('127.0.0.1', SharedRedis::port(), 5.0);
            } else {
                $client->disconnect();
                $client->connect();
            }
            $this->assertLocks($client);
        });
        $child->wait();
        self::ping($client);
    }

    /**
     * The connection was opened before fork(), but the parent closed its copy before the child used it: it is the
     * child's alone.
     */
    public function testAChildWhoseParentClosedItsCopyLocks(): void
    {
        $client = self::connect('phpredis');
        self::ping($client);
        $child = $this->fork(function (Channel $parent) use ($client): void {
            $this->assertSame('closed', $parent->receive());
            $this->assertLocks($client);
        });
        $client->close();
        $child->send('closed');
        $child->wait();
    }

    /**
     * A persistent connection per process, the php-fpm way: each process opens its own after the fork.
     */
    public function testPersistentConnectionsOfOneProcessEachLock(): void
    {
        $persistentId = uniqid('deadbolt-fork-', true);
        $child = $this->fork(function () use ($persistentId): void {
            $client = new \Redis();
            $this->assertTrue($client->pconnect('127.0.0.1', SharedRedis::port(), 5.0, $persistentId));
            $this->assertLocks($client);
        });
        $child->wait();
        $client = new \Redis();
        $this->assertTrue($client->pconnect('127.0.0.1', SharedRedis::port(), 5.0, $persistentId.':parent'));
        $this->assertLocks($client);
    }

    /**
     * A store by DSN is fork-safe by itself: Deadbolt's connections are per process, and a child opens its own.
     */
    public function testADsnStoreLocksInAForkedChild(): void
    {
        $factory = new LockFactory(new RedisStore(SharedRedis::dsn()));
        $resource = uniqid(__METHOD__, true);
        $lock = $factory->createLock($resource, 30.0, false);
        $this->assertTrue($lock->acquire(false));
        $lock->release();
        $child = $this->fork(function () use ($factory, $resource): void {
            $lock = $factory->createLock($resource, 30.0, false);
            $this->assertTrue($lock->acquire(false));
            $lock->release();
        });
        $child->wait();
        $this->assertTrue($lock->acquire(false));
        $lock->release();
    }

    /**
     * When the child has connections of its own to the server beside inherited ones, Deadbolt cannot tell which one a
     * client uses: nothing is refused, but a reply out of step names a connection shared since fork() as the likely
     * cause. A server that answers +OK to everything gives such a reply, every time. A process that was not forked
     * gets the same error without the hint.
     */
    public function testAReplyOutOfStepOnAClientThatMayBeSharedNamesTheLikelyCause(): void
    {
        $server = $this->spawn(<<<'PHP'
            $server = stream_socket_server('tcp://127.0.0.1:0');
            $name = (string) stream_socket_get_name($server, false);
            echo substr($name, strrpos($name, ':') + 1), "\n";
            $clients = [];
            while (true) {
                $read = [$server, ...$clients];
                $write = $except = null;
                if (stream_select($read, $write, $except, 60) < 1) {
                    exit(0);
                }
                foreach ($read as $socket) {
                    if ($socket === $server) {
                        $clients[] = stream_socket_accept($server);
                        continue;
                    }
                    $data = fread($socket, 65536);
                    if ('' === $data || false === $data) {
                        fclose($socket);
                        $clients = array_values(array_filter($clients, static fn ($c) => $c !== $socket));
                        continue;
                    }
                    fwrite($socket, "+OK\r\n");
                }
            }
            PHP);
        $port = (int) $server->readLine();
        $inherited = new \Redis();
        $this->assertTrue($inherited->connect('127.0.0.1', $port, 5.0));
        $parentPid = posix_getpid();

        $child = $this->fork(function (Channel $parent) use ($inherited, $port): void {
            $own = new \Redis();
            $this->assertTrue($own->connect('127.0.0.1', $port, 5.0));
            $parent->send(self::failureOf($inherited));
            $parent->send(self::failureOf($own));
        });
        $throughInherited = $child->receive();
        $throughOwn = $child->receive();
        $child->wait();

        foreach ([$throughInherited, $throughOwn] as $message) {
            $this->assertStringContainsString('the lock script answered with', $message);
            $this->assertStringContainsString('(Likely cause: this process shares connections to that server with process '.$parentPid, $message);
            $this->assertStringContainsString('before fork()', $message);
            $this->assertStringContainsString('onWorkerStart', $message);
            $this->assertStringContainsString('DSN', $message);
        }
        $inParent = self::failureOf($inherited);
        $this->assertStringContainsString('the lock script answered with', $inParent);
        $this->assertStringNotContainsString('fork()', $inParent);
    }

    /** The store's error of an acquire through $client. */
    private static function failureOf(\Redis $client): string
    {
        try {
            (new LockFactory(new RedisStore($client)))->createLock(uniqid(__METHOD__, true), 30.0, false)->acquire(false);
        } catch (LockAcquiringException $e) {
            return (string) $e->getPrevious()?->getMessage();
        }
        self::fail('acquire() on a server that answers +OK must fail');
    }

    private function assertLocks(\Redis|\Predis\Client $client): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new RedisStore($client)))->createLock($resource, 30.0, false);
        $this->assertTrue($lock->acquire(false));
        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertSame(0, SharedRedis::client()->exists($resource));
    }

    /**
     * @param 'phpredis'|'predis' $kind
     */
    private static function connect(string $kind): \Redis|\Predis\Client
    {
        if ('phpredis' === $kind) {
            return SharedRedis::newPhpRedis();
        }
        $client = SharedRedis::newPredis();
        $client->connect();

        return $client;
    }

    private static function ping(\Redis|\Predis\Client $client): void
    {
        $reply = $client->ping();
        self::assertTrue(true === $reply || 'PONG' === (string) $reply, 'PING answered');
    }

    /** CLIENT ID of the client's connection. */
    private static function clientId(\Redis|\Predis\Client $client): int
    {
        return (int) ($client instanceof \Redis ? $client->rawCommand('CLIENT', 'ID') : $client->executeRaw(['CLIENT', 'ID']));
    }

    /** The last command the server read on connection $id (CLIENT LIST's `cmd`). */
    private static function lastCommand(int $id): string
    {
        foreach (SharedRedis::client()->client('list') as $client) {
            if ((int) $client['id'] === $id) {
                return (string) $client['cmd'];
            }
        }
        self::fail("no connection $id in CLIENT LIST");
    }
}
