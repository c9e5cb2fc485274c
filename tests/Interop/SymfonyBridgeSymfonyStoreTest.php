<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Bridge\Symfony\SymfonyStore;
use Deadbolt\Exception\LockAcquiringException;
use Deadbolt\LockFactory;
use Deadbolt\Tests\Store\SymfonyStoreContractTest;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\FlockStore as SymfonyFlockStore;
use Symfony\Component\Lock\Store\PdoStore;

/**
 * Deadbolt's Lock on a symfony/lock store through the bridge's SymfonyStore: on symfony/lock's own data, so Deadbolt
 * and symfony/lock processes exclude each other (PdoStore on SQLite: an expiring store and its table; FlockStore), with
 * Deadbolt's deadline, fork safety and errors on top.
 *
 * @requires extension pdo_sqlite
 */
#[\PHPUnit\Framework\Attributes\RequiresPhpExtension('pdo_sqlite')]
final class SymfonyBridgeSymfonyStoreTest extends DeadboltTestCase
{
    private string $dir;

    protected function setUp(): void
    {
        $this->dir = $this->tempDir();
        SymfonyStoreContractTest::pdoStore($this->dir); // the table
    }

    private function deadbolt(): LockFactory
    {
        return new LockFactory(new SymfonyStore(new PdoStore($this->dsn())));
    }

    private function symfony(): SymfonyLockFactory
    {
        return new SymfonyLockFactory(new PdoStore($this->dsn()));
    }

    private function dsn(): string
    {
        return 'sqlite:'.$this->dir.'/locks.sqlite';
    }

    public function testDeadboltAndSymfonyExcludeEachOtherOnTheTable(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadbolt()->createLock($resource, 30.0);
        $symfony = $this->symfony()->createLock($resource, 30.0);

        $this->assertTrue($deadbolt->acquire());
        $this->assertFalse($symfony->acquire());
        $deadbolt->release();
        $this->assertTrue($symfony->acquire());
        $this->assertFalse($deadbolt->acquire());
        $this->assertFalse($deadbolt->acquire(true, timeout: 0.3), 'a deadline ends the wait');
        $symfony->release();
        $this->assertTrue($deadbolt->acquire(true, timeout: 30.0));
    }

    public function testSymfonyInAnotherProcessIsRefusedWhileDeadboltHolds(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadbolt()->createLock($resource, 30.0);
        $this->assertTrue($deadbolt->acquire());
        $probe = <<<'PHP'
            require getenv('DEADBOLT_SYMFONY_LOCK_AUTOLOAD') ?: '/usr/share/php/Symfony/Component/Lock/autoload.php';
            $factory = new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\PdoStore($vars['dsn']));
            echo $factory->createLock($vars['resource'])->acquire() ? 'acquired' : 'refused';
            PHP;

        $held = PhpProcess::run($probe, ['dsn' => $this->dsn(), 'resource' => $resource], false);
        $deadbolt->release();
        $free = PhpProcess::run($probe, ['dsn' => $this->dsn(), 'resource' => $resource], false);

        $this->assertSame(['exit' => 0, 'stdout' => 'refused', 'stderr' => ''], $held);
        $this->assertSame(['exit' => 0, 'stdout' => 'acquired', 'stderr' => ''], $free);
    }

    public function testTheLifetimeIsTheRowsExpiry(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = $this->deadbolt()->createLock($resource, 30.0);
        $this->assertTrue($lock->acquire());
        $this->assertLessThanOrEqual(30.0, $lock->getRemainingLifetime());

        $lock->refresh(600.0);

        $this->assertGreaterThan(30.0, $lock->getRemainingLifetime());
        $expiry = (new \PDO($this->dsn()))->query('SELECT key_expiration FROM lock_keys')->fetchColumn();
        $this->assertGreaterThan(time() + 30, (int) $expiry, 'the row was put off too');
    }

    public function testAForkedChildOfTheHolderReleasesNothing(): void
    {
        $resource = uniqid(__METHOD__, true);
        $lock = (new LockFactory(new SymfonyStore(new SymfonyFlockStore($this->dir))))->createLock($resource);
        $this->assertTrue($lock->acquire());

        $child = $this->fork(function (Channel $parent) use ($lock): void {
            $lock->release(); // the child's copy: it holds nothing, and frees nothing of its parent's
            $parent->send('done');
        });
        $this->assertSame('done', $child->receive());
        $child->wait();

        $this->assertTrue($lock->isAcquired());
        $this->assertFalse((new SymfonyLockFactory(new SymfonyFlockStore($this->dir)))->createLock($resource)->acquire());
    }

    public function testAFailingSymfonyStoreIsAnAcquiringErrorWithItsCause(): void
    {
        $store = new SymfonyStore(new PdoStore('sqlite:'.$this->dir.'/missing-dir/locks.sqlite'));
        $lock = (new LockFactory($store))->createLock(uniqid(__METHOD__, true));

        try {
            $lock->acquire();
            $this->fail('a store that cannot open its database took a lock');
        } catch (LockAcquiringException $e) {
            $causes = [];
            for ($cause = $e; null !== $cause; $cause = $cause->getPrevious()) {
                $causes[] = $cause::class;
            }
            $this->assertContains(\PDOException::class, $causes);
        }
    }
}
