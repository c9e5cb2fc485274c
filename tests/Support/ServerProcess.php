<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A server process a test started (RedisServer, MemcachedServer): a direct child of the test process, stopped with
 * SIGKILL, started again on its own port. Only the process that started it touches it (copies in forked children do
 * nothing).
 */
trait ServerProcess
{
    /** @var resource|null */
    private $process = null;

    private readonly int $ownerPid;

    /**
     * Starts the server process on $this->port; throws \RuntimeException when it does not come up.
     */
    abstract private function launch(): void;

    /**
     * Kills the server (SIGKILL: its clients see their connections drop) and waits until it is gone.
     */
    public function stop(): void
    {
        if (null === $this->process || posix_getpid() !== $this->ownerPid) {
            return;
        }
        $status = proc_get_status($this->process);
        if ($status['running']) {
            posix_kill($status['pid'], SIGKILL);
        }
        proc_close($this->process);
        $this->process = null;
    }

    /**
     * Starts the server again on the same port, with an empty dataset.
     */
    public function restart(): void
    {
        $this->stop();
        $lastError = '';
        // The old listening socket is gone once the process is; a few tries cover a slow kernel.
        for ($attempt = 0; $attempt < 20; ++$attempt) {
            try {
                $this->launch();

                return;
            } catch (\RuntimeException $e) {
                $lastError = $e->getMessage();
                $this->process = null;
                usleep(100_000);
            }
        }
        throw new \RuntimeException("Could not restart the server on port {$this->port}: ".$lastError);
    }
}
