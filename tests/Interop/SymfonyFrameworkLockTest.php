<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\LockFactory as BridgeLockFactory;
use Deadbolt\Bridge\Symfony\NativeLock;
use Deadbolt\LockFactory as DeadboltLockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Lock\Lock;
use Symfony\Component\Lock\LockFactory;

/**
 * framework.lock in a booted Symfony kernel (FrameworkBundle 5.4 on Debian 12, 6.4 on Debian 13) with Deadbolt put
 * under its factories by decoration, as README says: what the application's services autowire is Deadbolt's engine,
 * and its locks exclude Deadbolt's own and those of another process.
 */
final class SymfonyFrameworkLockTest extends DeadboltTestCase
{
    public static function setUpBeforeClass(): void
    {
        // An application's vendor/autoload.php brings Composer 2's runtime API, which FrameworkBundle 6.4 asks.
        require_once '/usr/share/php/Composer/InstalledVersions.php';
        require_once '/usr/share/php/Symfony/Bundle/FrameworkBundle/autoload.php';
        require_once __DIR__.'/FrameworkLockKernel.php';
    }

    public function testTheConfiguredFactoriesAreDeadbolts(): void
    {
        $dir = $this->tempDir();
        $kernel = new FrameworkLockKernel($dir, SharedRedis::dsn());
        $kernel->boot();
        try {
            $default = $kernel->getContainer()->get('test.default_factory');
            $this->assertInstanceOf(BridgeLockFactory::class, $default, 'LockFactory $lockFactory');
            $reports = $kernel->getContainer()->get('test.reports_factory');
            $this->assertInstanceOf(LockFactory::class, $reports, 'LockFactory $reportsLockFactory');

            $name = uniqid('invoice-', true);
            $lock = $default->createLock($name, 30.0);
            $this->assertInstanceOf(NativeLock::class, $lock);
            $this->assertTrue($lock->acquire());
            $this->assertFalse((new DeadboltLockFactory(new RedisStore(SharedRedis::dsn())))->createLock($name)->acquire(), 'a Deadbolt lock on Redis finds it held');

            $report = $reports->createLock($name, 30.0);
            $this->assertInstanceOf(Lock::class, $report, "Symfony's own Lock");
            $this->assertTrue($report->acquire());
            $this->assertFalse((new DeadboltLockFactory(new FlockStore($dir)))->createLock($name)->acquire(), 'a Deadbolt lock on the flock directory finds it held');

            $other = $this->fork(static function (Channel $parent) use ($dir, $name): void {
                $kernel = new FrameworkLockKernel($dir, SharedRedis::dsn());
                $kernel->boot();
                $container = $kernel->getContainer();
                $parent->send(json_encode([
                    $container->get('test.default_factory')->createLock($name)->acquire(),
                    $container->get('test.reports_factory')->createLock($name)->acquire(),
                ]));
            });
            $this->assertSame([false, false], json_decode($other->receive(), true), 'another process of the application finds both held');
            $other->wait();

            $lock->release();
            $report->release();
            $this->assertTrue((new DeadboltLockFactory(new RedisStore(SharedRedis::dsn())))->createLock($name)->acquire(), 'released');
        } finally {
            $kernel->shutdown();
        }
    }
}
