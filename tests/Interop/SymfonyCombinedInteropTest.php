<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\LockFactory;
use Deadbolt\Store\CombinedStore;
use Deadbolt\Store\RedisStore;
use Deadbolt\Strategy\ConsensusStrategy;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\IndependentMasters;
use Deadbolt\Tests\Support\RedisServer;
use Symfony\Component\Lock\LockFactory as SymfonyLockFactory;
use Symfony\Component\Lock\Store\CombinedStore as SymfonyCombinedStore;
use Symfony\Component\Lock\Store\RedisStore as SymfonyRedisStore;
use Symfony\Component\Lock\Strategy\ConsensusStrategy as SymfonyConsensusStrategy;

/**
 * A mixed fleet on three independent masters: workers still on symfony/lock's CombinedStore (over phpredis) and
 * workers on Deadbolt's hold one lock: each side sees the other's, in exclusive and shared mode, and gets it once
 * the other released.
 */
final class SymfonyCombinedInteropTest extends DeadboltTestCase
{
    private IndependentMasters $group;

    protected function setUp(): void
    {
        $this->group = new IndependentMasters();
    }

    protected function tearDown(): void
    {
        $this->group->stop();
    }

    private function deadbolt(): LockFactory
    {
        return new LockFactory(new CombinedStore(
            array_map(static fn (RedisServer $m) => new RedisStore($m->dsn()), $this->group->servers),
            new ConsensusStrategy(),
        ));
    }

    private function symfony(): SymfonyLockFactory
    {
        return new SymfonyLockFactory(new SymfonyCombinedStore(
            array_map(static fn (RedisServer $m) => new SymfonyRedisStore($m->client()), $this->group->servers),
            new SymfonyConsensusStrategy(),
        ));
    }

    /** @return iterable<string, array{string, string, bool}> */
    public static function modePairs(): iterable
    {
        yield 'exclusive vs exclusive' => ['acquire', 'acquire', false];
        yield 'shared vs exclusive' => ['acquireRead', 'acquire', false];
        yield 'shared + shared' => ['acquireRead', 'acquireRead', true];
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testSymfonyHolderVersusDeadbolt(string $symfonyMode, string $deadboltMode, bool $coexist): void
    {
        $resource = uniqid('combined-interop-', true);
        $symfony = $this->symfony()->createLock($resource, 30.0);
        $deadbolt = $this->deadbolt()->createLock($resource, 30.0);

        $this->assertTrue($symfony->$symfonyMode(false));
        $this->assertSame($coexist, $deadbolt->$deadboltMode(false));
        $symfony->release();
        $this->assertTrue($coexist || $deadbolt->$deadboltMode(false), 'Deadbolt gets it once Symfony released');
        $this->assertTrue($deadbolt->isAcquired());
    }

    /**
     * @dataProvider modePairs
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('modePairs')]
    public function testDeadboltHolderVersusSymfony(string $deadboltMode, string $symfonyMode, bool $coexist): void
    {
        $resource = uniqid('combined-interop-', true);
        $deadbolt = $this->deadbolt()->createLock($resource, 30.0);
        $symfony = $this->symfony()->createLock($resource, 30.0);

        $this->assertTrue($deadbolt->$deadboltMode(false));
        $this->assertSame($coexist, $symfony->$symfonyMode(false));
        $deadbolt->release();
        $this->assertTrue($coexist || $symfony->$symfonyMode(false), 'Symfony gets it once Deadbolt released');
        $this->assertTrue($symfony->isAcquired());
    }

    public function testWithOneMasterDownBothSidesStillExcludeEachOther(): void
    {
        $resource = uniqid('combined-interop-down-', true);
        $deadbolt = $this->deadbolt();
        $symfony = $this->symfony(); // connects its phpredis clients now
        $this->group->servers[1]->stop();

        $held = $deadbolt->createLock($resource, 30.0);
        $this->assertTrue($held->acquire());
        $this->assertFalse($symfony->createLock($resource, 30.0)->acquire(), 'two masters still hold it');
        $held->release();
        $this->assertTrue($symfony->createLock($resource, 30.0)->acquire());
    }
}
