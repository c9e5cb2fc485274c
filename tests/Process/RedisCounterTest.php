<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Mutual exclusion through Redis across processes, measured by its effect: no lost update on a shared counter file.
 */
final class RedisCounterTest extends DeadboltTestCase
{
    use CountsUnderALock;

    private const PROCESSES = 4;
    private const INCREMENTS = 100;

    public function testForkedProcessesNeverLoseAnIncrementMadeUnderARedisLock(): void
    {
        $dsn = SharedRedis::dsn();
        $resource = uniqid(__METHOD__, true);
        $count = $this->countInForks(static fn () => new RedisStore($dsn), $resource, self::PROCESSES, self::INCREMENTS);

        $this->assertSame((string) (self::PROCESSES * self::INCREMENTS), $count);
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'the last release left nothing behind');
    }

    public function testFreshPhpProcessesNeverLoseAnIncrementMadeUnderARedisLock(): void
    {
        $count = $this->countInFreshProcesses('new Deadbolt\Store\RedisStore($vars[\'dsn\'])', ['dsn' => SharedRedis::dsn()], uniqid(__METHOD__, true), self::PROCESSES, self::INCREMENTS);

        $this->assertSame((string) (self::PROCESSES * self::INCREMENTS), $count);
    }
}
