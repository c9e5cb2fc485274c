<?php

/*
 * The Redis keys of one run. Every resource name starts with a prefix new to the run, deadbolt-bench:<random>:, so
 * runs never see each other's keys, and the keys a store derives from a name contain it too (Deadbolt's
 * name#deadbolt:fence{name}, name#deadbolt:queue{name}, name#deadbolt:waiters{name}, name#deadbolt:handovers{name}). At the end every key whose name
 * contains the prefix is deleted.
 */

declare(strict_types=1);

require_once __DIR__ . '/resp.php';

final class RunKeys
{
    public readonly string $prefix;

    public function __construct(string $runId)
    {
        $this->prefix = "deadbolt-bench:$runId:";
    }

    /** @return list<string> every key of the run still in Redis */
    public function find(Resp $redis): array
    {
        return $redis->scan('*' . $this->prefix . '*');
    }

    /**
     * Deletes every key of the run when this process exits: at the end, after an exception or a fatal error, and on
     * SIGINT or SIGTERM (with pcntl). A process forked from this one leaves them alone.
     */
    public function deleteAtExit(Resp $redis, string $script): void
    {
        if (function_exists('pcntl_async_signals')) {
            pcntl_async_signals(true);
            foreach ([SIGINT, SIGTERM] as $signal) {
                pcntl_signal($signal, static function (int $signal) use ($script): never {
                    fwrite(STDERR, "$script: interrupted, deleting this run's keys\n");
                    exit(128 + $signal); // exit runs the shutdown functions
                });
            }
        }
        $owner = getmypid();
        register_shutdown_function(function () use ($redis, $owner): void {
            if (getmypid() !== $owner) {
                return;
            }
            try {
                $redis->delete($this->find($redis));
            } catch (Throwable) {
                // The run's own error (if any) has been printed already; a clean-up that fails on top adds nothing.
            }
        });
    }
}
