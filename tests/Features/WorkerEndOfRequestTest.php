<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Features;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\SharedRedis;
use Deadbolt\Worker;

/**
 * `Deadbolt\Worker::endRequest()`: a long-running worker's logical end of request does to the locks still held what
 * the end of an FPM request does (releases those made with autoRelease, keeps the others). The judge of "released"
 * is a second factory on the same store (another store object: for the in-memory store that is the same object).
 */
final class WorkerEndOfRequestTest extends FeatureTestCase
{
    /**
     * @dataProvider allKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('allKinds')]
    public function testLocksKeptPastTheirRequestAreReleasedAtItsLogicalEnd(string $kind): void
    {
        $place = $this->placeFor($kind);
        $factory = self::factoryFor($kind, $place);
        $judge = $kind === 'memory' ? $factory : self::factoryFor($kind, $place);
        $name = uniqid('worker', true);
        Worker::endRequest(); // what earlier tests of this process left is not this request's
        // One "request" of a worker: a lock kept by a long-lived service, one kept on purpose across requests, one
        // released as it should be.
        $forgotten = $factory->createLock("$name-forgotten", 30);
        $kept = $factory->createLock("$name-kept", 30, autoRelease: false);
        $released = $factory->createLock("$name-released", 30);
        $this->assertTrue($forgotten->acquire());
        $this->assertTrue($kept->acquire());
        $this->assertTrue($released->acquire());
        $released->release();

        $this->assertSame(1, Worker::endRequest());
        $this->assertSame(0, Worker::endRequest(), 'a second end has nothing left');

        $this->assertFalse($forgotten->isAcquired());
        $this->assertTrue($kept->isAcquired());
        $taker = $judge->createLock("$name-forgotten", 30);
        $this->assertTrue($taker->acquire(), 'the forgotten lock is free again');
        $this->assertFalse($judge->createLock("$name-kept", 30)->acquire(), 'autoRelease: false keeps it held');
        // The Lock object is usable in the next request.
        $this->assertFalse($forgotten->acquire(), 'the judge holds it now');
        $taker->release();
        $this->assertTrue($forgotten->acquire());
        $forgotten->release();
        $kept->release();
    }

    public function testTheEndOfARequestReleasesLocksOnTheApplicationsRedisClientToo(): void
    {
        $factory = new \Deadbolt\LockFactory(new RedisStore(SharedRedis::newPhpRedis()));
        $judge = new \Deadbolt\LockFactory(new RedisStore(SharedRedis::dsn()));
        $name = uniqid('worker-lent', true);
        Worker::endRequest();
        $forgotten = $factory->createLock($name, 30);
        $this->assertTrue($forgotten->acquire());
        $this->assertSame(1, Worker::endRequest());
        $this->assertTrue($judge->createLock($name, 30)->acquire());
    }

    public function testLocksThatDiedWithTheirRequestAreNotCounted(): void
    {
        $factory = self::factoryFor('flock', $this->placeFor('flock'));
        Worker::endRequest();
        $lock = $factory->createLock(uniqid('worker-dead', true), 30);
        $this->assertTrue($lock->acquire());
        unset($lock); // its destructor released it
        $this->assertSame(0, Worker::endRequest());
    }

    public function testALockAcquiredAgainWhileHeldAmidManyShortLivedOnesIsReleasedOnce(): void
    {
        $factory = self::factoryFor('flock', $this->placeFor('flock'));
        $name = uniqid('worker-again', true);
        Worker::endRequest();
        $held = $factory->createLock($name, 30);
        for ($i = 0; $i < 300; $i++) {
            $this->assertTrue($held->acquire(), 'acquiring a held lock again answers true');
            $passing = $factory->createLock("$name-$i", 30);
            $this->assertTrue($passing->acquire());
        }
        unset($passing);
        $this->assertSame(1, Worker::endRequest(), 'the held lock once; the 300 others died with their objects');
        $this->assertFalse($held->isAcquired());
    }
}
