<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\Semaphore\NativeSemaphore;
use Deadbolt\Bridge\Symfony\Semaphore\SemaphoreFactory;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;
use Symfony\Component\Semaphore\Exception\InvalidArgumentException;
use Symfony\Component\Semaphore\Exception\SemaphoreExpiredException;
use Symfony\Component\Semaphore\Key;
use Symfony\Component\Semaphore\SemaphoreFactory as SymfonySemaphoreFactory;
use Symfony\Component\Semaphore\SemaphoreInterface;
use Symfony\Component\Semaphore\Store\RedisStore as SymfonyRedisStore;

/**
 * The Symfony bridge's SemaphoreFactory (php/src/Semaphore): code typed against symfony/semaphore's SemaphoreFactory
 * and SemaphoreInterface gets Deadbolt's semaphores, fails with symfony/semaphore's exceptions, and shares slots with
 * symfony/semaphore's own RedisStore.
 */
final class SymfonyBridgeSemaphoreTest extends DeadboltTestCase
{
    public static function setUpBeforeClass(): void
    {
        require_once getenv('DEADBOLT_SYMFONY_SEMAPHORE_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Semaphore/autoload.php';
    }

    /** What code typed against Symfony's factory does. */
    private static function exportsUnder(SymfonySemaphoreFactory $factory, string $resource): SemaphoreInterface
    {
        return $factory->createSemaphore($resource, 2, 1, 30.0);
    }

    public function testSymfonyTypedCodeGetsDeadboltsSemaphores(): void
    {
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $resource = uniqid(__METHOD__, true);
        $first = self::exportsUnder($factory, $resource);
        $second = self::exportsUnder($factory, $resource);
        $third = self::exportsUnder($factory, $resource);
        $this->assertInstanceOf(NativeSemaphore::class, $first);
        $this->assertTrue($first->acquire());
        $this->assertTrue($second->acquire());
        $this->assertFalse($third->acquire());

        $symfony = new SymfonySemaphoreFactory(new SymfonyRedisStore(SharedRedis::newPhpRedis()));
        $this->assertFalse(self::exportsUnder($symfony, $resource)->acquire(), 'symfony/semaphore counts the same slots');
        $first->release();
        $theirs = self::exportsUnder($symfony, $resource);
        $this->assertTrue($theirs->acquire());
        $this->assertFalse($third->acquire(true, 0.2), 'a wait with a deadline gives up');
        $theirs->release();
        $this->assertTrue($third->acquire(true, 10.0));
    }

    public function testFailuresAreSymfonySemaphoresExceptions(): void
    {
        $factory = new SemaphoreFactory(new InMemoryStore());
        try {
            $factory->createSemaphore('x', 0);
            $this->fail('a limit of 0 was accepted');
        } catch (InvalidArgumentException $e) {
            $this->assertSame('The limit (0) should be greater than 0.', $e->getMessage());
        }
        $semaphore = $factory->createSemaphoreFromKey(new Key('x', 1), 30.0);
        try {
            $semaphore->refresh();
            $this->fail('a refresh of a slot never taken succeeded');
        } catch (SemaphoreExpiredException $e) {
            $this->assertStringStartsWith('The semaphore "x" has expired: ', $e->getMessage());
        }
    }
}
