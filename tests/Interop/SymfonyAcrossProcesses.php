<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Interop;

use Deadbolt\Tests\Support\PhpProcess;

/**
 * The two waits across processes of every store's interop suite: Deadbolt waits until a symfony/lock process that
 * holds the lock releases it, and a symfony/lock process waits until Deadbolt releases. The using class gives the
 * locks and the symfony/lock process, which prints "holding" (or "refused") once it acquired, then "released" after
 * a line on its stdin, and ends.
 */
trait SymfonyAcrossProcesses
{
    abstract protected function deadboltLock(string $resource): \Deadbolt\Lock;

    /**
     * A symfony/lock process for $resource, past its "ready" line: it acquires, waiting when $blocking.
     */
    abstract protected function spawnSymfony(string $resource, bool $blocking): PhpProcess;

    /**
     * Returns once the symfony/lock process waits for the lock, where the store can tell (its server's queue, the
     * kernel); at once where it cannot (a store that is polled).
     */
    protected function untilSymfonyWaits(PhpProcess $symfony, string $resource): void
    {
    }

    public function testDeadboltWaitsUntilSymfonyInAnotherProcessReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $symfony = $this->spawnSymfony($resource, blocking: false);
        $this->assertSame('holding', $symfony->readLine());
        $deadbolt = $this->deadboltLock($resource);
        $this->assertFalse($deadbolt->acquire(false));

        $symfony->writeLine('release');
        $this->assertTrue($deadbolt->acquire(true, timeout: 60.0));

        $this->assertSymfonyReleasedAndEnded($symfony, false);
        $deadbolt->release();
    }

    public function testSymfonyInAnotherProcessWaitsUntilDeadboltReleases(): void
    {
        $resource = uniqid(__METHOD__, true);
        $deadbolt = $this->deadboltLock($resource);
        $this->assertTrue($deadbolt->acquire());
        $symfony = $this->spawnSymfony($resource, blocking: true);
        $this->untilSymfonyWaits($symfony, $resource);

        $deadbolt->release();

        $this->assertSame('holding', $symfony->readLine());
        $this->assertFalse($this->deadboltLock($resource)->acquire(false), 'the symfony/lock process holds it now');
        $this->assertSymfonyReleasedAndEnded($symfony, true);
    }

    /**
     * The symfony/lock process released (told to first when $tell) and ended cleanly.
     */
    private function assertSymfonyReleasedAndEnded(PhpProcess $symfony, bool $tell): void
    {
        if ($tell) {
            $symfony->writeLine('release');
        }
        $this->assertSame('released', $symfony->readLine());
        $symfony->closeStdin();
        $this->assertSame(0, $symfony->waitForExit(), $symfony->stderr());
    }
}
