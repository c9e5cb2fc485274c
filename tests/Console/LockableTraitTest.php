<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Console;

use Deadbolt\Bridge\Symfony\DeadboltStore;
use Deadbolt\Bridge\Symfony\LockFactory as BridgeLockFactory;
use Deadbolt\Bridge\Symfony\NativeLock;
use Deadbolt\LockFactory as DeadboltLockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;

/**
 * Symfony Console's LockableTrait (7.1 and later take a LockFactory through $lockFactory) on Deadbolt's engine, both
 * ways the bridge offers: the bridge's LockFactory (its locks are Deadbolt's native Lock), and Symfony's own
 * LockFactory over the DeadboltStore adapter. Runs where such a symfony/console is present: the symfony/lock 7.4 pass
 * of make test-debian13, which unpacks sid's php-symfony-console beside php-symfony-lock (scripts/symfony-lock-sid.sh).
 * symfony/console 5.4 and 6.4 (Debian 12 and 13) build their own FlockStore or SemaphoreStore inside the trait: no
 * store of anyone else's can reach them.
 */
final class LockableTraitTest extends DeadboltTestCase
{
    public static function setUpBeforeClass(): void
    {
        $trait = \dirname(deadbolt_symfony_lock_autoload(), 2).'/Console/Command/LockableTrait.php';
        if (!is_file($trait)) {
            throw new \RuntimeException("No symfony/console LockableTrait at $trait: this suite runs with symfony/lock 7.4 from scripts/symfony-lock-sid.sh");
        }
        require_once $trait;
        require_once __DIR__.'/LockedCommand.php';
    }

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function factories(): iterable
    {
        foreach (['flock', 'redis'] as $store) {
            yield "the bridge LockFactory, on $store" => [$store, 'bridge'];
            yield "Symfony LockFactory over DeadboltStore, on $store" => [$store, 'adapter'];
        }
    }

    private static function store(string $kind, string $dir): FlockStore|RedisStore
    {
        return 'flock' === $kind ? new FlockStore($dir) : new RedisStore(SharedRedis::dsn());
    }

    private static function factory(string $kind, string $wrap, string $dir): SymfonyLockFactory
    {
        $store = self::store($kind, $dir);

        return 'bridge' === $wrap ? new BridgeLockFactory($store) : new SymfonyLockFactory(new DeadboltStore($store));
    }

    /**
     * A second run of the command, in another process, finds it running; a Deadbolt lock on the command's name sees
     * the same lock (one engine underneath); after release() the next run gets it.
     *
     * @dataProvider factories
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('factories')]
    public function testASecondRunOfTheCommandFindsItRunning(string $kind, string $wrap): void
    {
        $dir = $this->tempDir();
        $name = uniqid('app:report-', true);
        $command = new LockedCommand(self::factory($kind, $wrap, $dir));
        $this->assertTrue($command->start($name));
        $this->assertTrue($command->heldLock()?->isAcquired());
        if ('bridge' === $wrap) {
            $this->assertInstanceOf(NativeLock::class, $command->heldLock(), "the trait's lock is Deadbolt's native Lock");
        }

        $other = $this->fork(static function (Channel $parent) use ($kind, $wrap, $dir, $name): void {
            $parent->send((new LockedCommand(self::factory($kind, $wrap, $dir)))->start($name) ? 'ran' : 'busy');
        });
        $this->assertSame('busy', $other->receive());
        $other->wait();
        $native = (new DeadboltLockFactory(self::store($kind, $dir)))->createLock($name);
        $this->assertFalse($native->acquire(), "a Deadbolt lock on the command's name finds it held");

        $command->finish();
        $this->assertNull($command->heldLock());
        $again = new LockedCommand(self::factory($kind, $wrap, $dir));
        $this->assertTrue($again->start($name), 'the next run gets the lock once the first released it');
        $again->finish();
    }

    /**
     * lock($name, true) waits for the running command, and gets the lock once that one released it.
     *
     * @dataProvider factories
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('factories')]
    public function testABlockingRunWaitsForTheRunningOne(string $kind, string $wrap): void
    {
        $dir = $this->tempDir();
        $name = uniqid('app:import-', true);
        $running = $this->fork(static function (Channel $parent) use ($kind, $wrap, $dir, $name): void {
            $command = new LockedCommand(self::factory($kind, $wrap, $dir));
            $parent->send($command->start($name) ? 'running' : 'busy');
            $parent->receive();
            usleep(100_000); // the other run is in its blocking lock() by now
            $parent->send('releasing');
            $command->finish();
        });
        $this->assertSame('running', $running->receive());

        $waiting = new LockedCommand(self::factory($kind, $wrap, $dir));
        $this->assertFalse($waiting->start($name), 'busy while the other runs');
        $running->send('finish');
        $this->assertTrue($waiting->start($name, true), 'the blocking run gets the lock once the other finished');
        $this->assertTrue($running->channel->hasPending(), 'it got the lock only after the other run said it was releasing');
        $this->assertSame('releasing', $running->receive());
        $waiting->finish();
        $running->wait();
    }
}
