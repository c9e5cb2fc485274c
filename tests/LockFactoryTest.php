<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Key;
use Deadbolt\Lock;
use Deadbolt\LockFactory;
use Deadbolt\Store\FlockStore;
use Deadbolt\Store\InMemoryStore;
use Deadbolt\Store\StoreFactory;
use Deadbolt\Tests\Support\DeadboltTestCase;

final class LockFactoryTest extends DeadboltTestCase
{
    /**
     * @dataProvider storeKinds
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('storeKinds')]
    public function testAcceptsEveryDeadboltStore(string $kind): void
    {
        $factory = new LockFactory($this->newStore($kind));

        $this->assertInstanceOf(Lock::class, $factory->createLock(uniqid(__METHOD__, true)));
        $this->assertInstanceOf(Lock::class, $factory->createLockFromKey(new Key(uniqid(__METHOD__, true))));
    }

    public function testAcceptsStoresFromTheStoreFactory(): void
    {
        $factory = new LockFactory(StoreFactory::createStore('flock://'.$this->tempDir()));

        $this->assertTrue($factory->createLock(uniqid(__METHOD__, true))->acquire());
    }

    public function testLocksOfOneFactoryShareTheStore(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $resource = uniqid(__METHOD__, true);
        $key = new Key($resource);

        $fromKey = $factory->createLockFromKey($key);
        $fromName = $factory->createLock($resource);

        $this->assertTrue($fromKey->acquire());
        $this->assertFalse($fromName->acquire());
    }

    public function testFactoriesOverOneFlockDirectoryShareTheLocks(): void
    {
        $dir = $this->tempDir();
        $resource = uniqid(__METHOD__, true);
        $first = (new LockFactory(new FlockStore($dir)))->createLock($resource);
        $second = (new LockFactory(new FlockStore($dir)))->createLock($resource);

        $this->assertTrue($first->acquire());
        $this->assertFalse($second->acquire());
    }

    public function testALockOutlivesItsFactory(): void
    {
        $lock = (new LockFactory(new FlockStore($this->tempDir())))->createLock(uniqid(__METHOD__, true));

        $this->assertTrue($lock->acquire());
        $this->assertTrue($lock->isAcquired());
        $lock->release();
        $this->assertFalse($lock->isAcquired());
    }

    public function testSetLoggerAcceptsAnyObjectWithALogMethod(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $logger = new class() {
            public int $calls = 0;

            public function log($level, $message, array $context = []): void
            {
                ++$this->calls;
            }
        };

        $factory->setLogger($logger);
        $factory->createLock(uniqid(__METHOD__, true), null)->acquire();

        $this->assertGreaterThan(0, $logger->calls);
    }

    public function testSetLoggerAcceptsAPsr3Logger(): void
    {
        $factory = new LockFactory(new InMemoryStore());
        $logger = new class() extends \Psr\Log\AbstractLogger {
            /** @var list<string> */
            public array $messages = [];

            public function log($level, $message, array $context = []): void
            {
                $this->messages[] = (string) $message;
            }
        };

        $factory->setLogger($logger);
        $factory->createLock(uniqid(__METHOD__, true), null)->acquire();

        $this->assertContains('Successfully acquired the "{resource}" lock.', $logger->messages);
    }
}
