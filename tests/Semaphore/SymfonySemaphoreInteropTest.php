<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Semaphore\SemaphoreFactory as SymfonySemaphoreFactory;
use Symfony\Component\Semaphore\Store\RedisStore as SymfonyRedisStore;

/**
 * Deadbolt and symfony/semaphore (Debian's php-symfony-semaphore: 5.4 on Debian 12) on one Redis count the same
 * slots: `{resource}:weight` and `{resource}:time`. Each library's holders exclude the other's beyond the limit, a
 * release of either frees weight for the other, and symfony/semaphore's scripts run on keys Deadbolt wrote (its
 * EXPIREAT needs whole seconds, which Deadbolt's expiries are).
 */
final class SymfonySemaphoreInteropTest extends DeadboltTestCase
{
    public static function setUpBeforeClass(): void
    {
        require_once getenv('DEADBOLT_SYMFONY_SEMAPHORE_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Semaphore/autoload.php';
    }

    private function symfony(): SymfonySemaphoreFactory
    {
        return new SymfonySemaphoreFactory(new SymfonyRedisStore(SharedRedis::newPhpRedis()));
    }

    private function deadbolt(): SemaphoreFactory
    {
        return new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
    }

    public function testSymfonyHoldersCountForDeadbolt(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfony()->createSemaphore($resource, 3, 2, 30.0);
        $this->assertTrue($symfony->acquire());

        $this->assertFalse($this->deadbolt()->createSemaphore($resource, 3, 2)->acquire(), '2 + 2 > 3');
        $one = $this->deadbolt()->createSemaphore($resource, 3, 1);
        $this->assertTrue($one->acquire());
        $one->release();

        $symfony->release();
        $this->assertTrue($this->deadbolt()->createSemaphore($resource, 3, 3)->acquire(), 'symfony\'s release freed it');
    }

    public function testDeadboltHoldersCountForSymfony(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadbolt()->createSemaphore($resource, 3, 2, 30.0);
        $this->assertTrue($deadbolt->acquire());

        $this->assertFalse($this->symfony()->createSemaphore($resource, 3, 2)->acquire(), '2 + 2 > 3');
        $symfony = $this->symfony()->createSemaphore($resource, 3, 1, 10.0);
        $this->assertTrue($symfony->acquire());
        $symfony->refresh(20.0);
        $this->assertTrue($symfony->isAcquired());
        $symfony->release();

        $deadbolt->release();
        $this->assertTrue($this->symfony()->createSemaphore($resource, 3, 3)->acquire(), 'Deadbolt\'s release freed it');
    }

    public function testADeadboltWaiterGetsTheWeightASymfonyHolderReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->symfony()->createSemaphore($resource, 1, 1, 30.0);
        $this->assertTrue($symfony->acquire());

        $waiter = $this->fork(function (Channel $parent) use ($resource): void {
            $semaphore = $this->deadbolt()->createSemaphore($resource, 1, 1, 30.0);
            $parent->send($semaphore->acquire(true, 60.0) ? 'acquired' : 'timed out');
            $parent->send($semaphore->isAcquired() ? 'held' : 'not held');
        });
        // The waiter has queued (Deadbolt's queue beside symfony/semaphore's keys): then the release.
        $redis = SharedRedis::client();
        $deadline = microtime(true) + 30.0;
        while (0 === $redis->zCard('{'.$resource.'}#deadbolt:squeue') && microtime(true) < $deadline) {
            usleep(2000);
        }
        $symfony->release();
        $this->assertSame('acquired', $waiter->receive());
        $this->assertSame('held', $waiter->receive());
        $waiter->wait();
    }
}
