<?php

/*
 * P forked worker processes released together (bench/contention.php).
 *
 * The parent forks them with pcntl_fork. Each sets up, says it is ready on a socket pair, and blocks reading a second
 * socket pair whose other end the parent then closes: all of them read end of file at once (the barrier). Each
 * worker's result, an array, comes back through a file. A run whose processes have not all ended after the timeout
 * is killed, and so is every worker still running when the parent exits.
 */

declare(strict_types=1);

final class WorkerPool
{
    /** @var array<int, int> worker => pid, of the run under way */
    private array $running = [];
    private readonly int $parentPid;

    public function __construct(private readonly int $timeoutS)
    {
        $this->parentPid = getmypid();
        // Workers exit through exit() too, which runs this in them: only the parent kills.
        register_shutdown_function(function (): void {
            if (getmypid() === $this->parentPid) {
                foreach ($this->running as $pid) {
                    posix_kill($pid, SIGKILL);
                    pcntl_waitpid($pid, $status);
                }
            }
        });
    }

    /**
     * Runs $work in $procs forked processes and waits for them all.
     *
     * $work(int $worker, Closure $barrier): array runs in each child: it sets up, calls $barrier() (which says it is
     * ready and returns when the parent opens the barrier), does its work and returns its result; it should catch
     * its own errors and put them in the result ('error' => message, non-null, makes the exit code 1). $atBarrier
     * runs in the parent once every worker is ready (or gone), just before it opens the barrier.
     *
     * @param string $resultPrefix path prefix of the result files ("-<worker>" is appended)
     *
     * @return array{start: int, results: array<int, ?array>, killed: bool} start: hrtime(true) at the barrier;
     *   results: per worker, null when it left none; killed: the timeout struck
     */
    public function run(int $procs, string $resultPrefix, Closure $work, ?Closure $atBarrier = null): array
    {
        $ready = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $go = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        $pids = [];
        for ($w = 0; $w < $procs; ++$w) {
            $pid = pcntl_fork();
            if ($pid === -1) {
                throw new RuntimeException('fork failed');
            }
            if ($pid === 0) {
                fclose($ready[0]);
                fclose($go[0]);
                self::child($w, $work, $ready[1], $go[1], "$resultPrefix-$w");
            }
            $pids[$w] = $pid;
            $this->running[$w] = $pid;
        }
        fclose($ready[1]);
        fclose($go[1]);
        stream_set_timeout($ready[0], $this->timeoutS);
        $got = 0;
        while ($got < $procs) {
            $bytes = fread($ready[0], $procs - $got);
            if ($bytes === '' || $bytes === false) {
                break; // every child has gone: the results say why
            }
            $got += strlen($bytes);
        }
        if ($atBarrier !== null) {
            $atBarrier();
        }
        $start = hrtime(true);
        fclose($go[0]); // the barrier: every child reads end of file at once
        $deadline = $start + $this->timeoutS * 1_000_000_000;
        $killed = false;
        while ($pids !== []) {
            foreach ($pids as $w => $pid) {
                if (pcntl_waitpid($pid, $status, WNOHANG) !== 0) {
                    unset($pids[$w], $this->running[$w]);
                }
            }
            if ($pids !== [] && hrtime(true) > $deadline) {
                foreach ($pids as $pid) {
                    posix_kill($pid, SIGKILL);
                }
                $killed = true;
            }
            usleep(20_000);
        }
        fclose($ready[0]);

        $results = [];
        for ($w = 0; $w < $procs; ++$w) {
            $file = "$resultPrefix-$w";
            $result = is_file($file) ? unserialize((string) file_get_contents($file)) : null;
            $results[$w] = is_array($result) ? $result : null;
        }

        return ['start' => $start, 'results' => $results, 'killed' => $killed];
    }

    /**
     * @param resource $ready child's end of the ready pair
     * @param resource $go    child's end of the barrier pair
     */
    private static function child(int $worker, Closure $work, $ready, $go, string $resultFile): never
    {
        $signalled = false;
        $barrier = static function () use ($ready, $go, &$signalled): void {
            fwrite($ready, 'R');
            $signalled = true;
            while (fread($go, 1) !== '') {
                // The parent never writes: end of file is the signal.
            }
        };
        $result = $work($worker, $barrier);
        if (!$signalled) {
            fwrite($ready, 'R'); // never leave the parent waiting for a ready byte
        }
        file_put_contents($resultFile, serialize($result));
        exit(($result['error'] ?? null) === null ? 0 : 1);
    }
}
