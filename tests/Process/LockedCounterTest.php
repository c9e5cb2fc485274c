<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Store\FlockStore;
use Deadbolt\Tests\Support\DeadboltTestCase;

/**
 * Mutual exclusion across processes, measured by its effect: no lost update on a shared counter file.
 */
final class LockedCounterTest extends DeadboltTestCase
{
    use CountsUnderALock;

    private const PROCESSES = 4;
    private const INCREMENTS = 200;

    public function testForkedProcessesNeverLoseAnIncrementMadeUnderTheLock(): void
    {
        $dir = $this->tempDir();
        $count = $this->countInForks(static fn () => new FlockStore($dir), uniqid(__METHOD__, true), self::PROCESSES, self::INCREMENTS);

        $this->assertSame((string) (self::PROCESSES * self::INCREMENTS), $count);
    }

    public function testFreshPhpProcessesNeverLoseAnIncrementMadeUnderTheLock(): void
    {
        $count = $this->countInFreshProcesses('new Deadbolt\Store\FlockStore($vars[\'dir\'])', ['dir' => $this->tempDir()], uniqid(__METHOD__, true), 3, 100);

        $this->assertSame('300', $count);
    }
}
