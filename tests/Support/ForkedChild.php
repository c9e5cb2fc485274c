<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A pcntl_fork() child of the test process, with a Channel to it.
 *
 * The child runs the given callable with its end of the channel and exits: 0 when the callable returned, 1 when it
 * threw (the error, assertion failures included, is handed to the parent and rethrown by wait()). The child leaves
 * with exit(), so PHP's shutdown runs in it: destructors of every object it inherited from the parent run too.
 */
final class ForkedChild
{
    private ?int $status = null;

    private function __construct(
        public readonly int $pid,
        public readonly Channel $channel,
        private readonly string $errorFile,
        private readonly int $parentPid,
    ) {
    }

    /**
     * @param callable(Channel): void $body runs in the child
     */
    public static function start(callable $body): self
    {
        $pair = stream_socket_pair(STREAM_PF_UNIX, STREAM_SOCK_STREAM, STREAM_IPPROTO_IP);
        if (false === $pair) {
            throw new \RuntimeException('stream_socket_pair() failed');
        }
        $errorFile = tempnam(sys_get_temp_dir(), 'deadbolt-child-error-');
        $parentPid = posix_getpid();

        $pid = pcntl_fork();
        if (-1 === $pid) {
            throw new \RuntimeException('pcntl_fork() failed: '.pcntl_strerror(pcntl_get_last_error()));
        }
        if (0 === $pid) {
            fclose($pair[0]);
            $status = 0;
            try {
                $body(new Channel($pair[1]));
            } catch (\Throwable $e) {
                file_put_contents($errorFile, \get_class($e).': '.$e->getMessage()."\n".$e->getTraceAsString());
                $status = 1;
            }
            exit($status);
        }

        fclose($pair[1]);

        return new self($pid, new Channel($pair[0]), $errorFile, $parentPid);
    }

    public function send(string $message): void
    {
        $this->channel->send($message);
    }

    /**
     * The child's next message; when the child died instead, fails with the child's own error.
     */
    public function receive(float $timeout = 60.0): string
    {
        try {
            return $this->channel->receive($timeout);
        } catch (\RuntimeException $e) {
            try {
                $this->wait(5.0);
            } catch (\PHPUnit\Framework\AssertionFailedError $failure) {
                // Both halves of the story: why nothing came, and what the child was doing.
                throw new \PHPUnit\Framework\AssertionFailedError($e->getMessage().'; '.$failure->getMessage(), 0, $e);
            }
            throw $e;
        }
    }

    /**
     * Reaps the child and fails when it did not exit with 0.
     *
     * @throws \PHPUnit\Framework\AssertionFailedError naming the child's error
     */
    public function wait(float $timeout = 60.0): void
    {
        $status = $this->reap($timeout);
        $error = $this->recordedError();
        @unlink($this->errorFile);
        if (!pcntl_wifexited($status) || 0 !== pcntl_wexitstatus($status)) {
            throw new \PHPUnit\Framework\AssertionFailedError(sprintf(
                "Forked child %d %s.\n%s",
                $this->pid,
                pcntl_wifexited($status) ? 'exited with '.pcntl_wexitstatus($status) : 'died from signal '.pcntl_wtermsig($status),
                '' !== $error ? $error : '(no error recorded)'
            ));
        }
    }

    /**
     * Kills the child if it still runs (cleanup after a failed test). Does nothing in any other process.
     */
    public function kill(): void
    {
        if (null !== $this->status || posix_getpid() !== $this->parentPid) {
            return;
        }
        posix_kill($this->pid, SIGKILL);
        $this->reap(10.0);
        $this->channel->close();
        @unlink($this->errorFile);
    }

    private function reap(float $timeout): int
    {
        if (null !== $this->status) {
            return $this->status;
        }
        $deadline = hrtime(true) + (int) ($timeout * 1e9);
        while (true) {
            $status = 0;
            $result = pcntl_waitpid($this->pid, $status, WNOHANG);
            if ($result === $this->pid) {
                return $this->status = $status;
            }
            if (-1 === $result) {
                throw new \RuntimeException("waitpid({$this->pid}) failed");
            }
            if (hrtime(true) > $deadline) {
                $threads = $this->threads();
                posix_kill($this->pid, SIGKILL);
                pcntl_waitpid($this->pid, $status);
                $this->status = $status;
                $error = $this->recordedError();
                throw new \PHPUnit\Framework\AssertionFailedError(sprintf("Forked child %d still ran after %.0f s: killed (threads: %s)%s", $this->pid, $timeout, $threads, '' !== $error ? "\nIt had failed with: $error" : ''));
            }
            usleep(1000);
        }
    }

    /** The error the child handed over before it exited (or was killed), if any. */
    private function recordedError(): string
    {
        return is_file($this->errorFile) ? (string) file_get_contents($this->errorFile) : '';
    }

    /**
     * What each thread of a hung child was blocked in (name, kernel wait channel, system call number), so that a
     * hang reported by CI can be told apart from slowness.
     */
    private function threads(): string
    {
        $threads = [];
        foreach (glob("/proc/{$this->pid}/task/*") ?: [] as $task) {
            $read = static fn (string $file): string => trim((string) @file_get_contents("$task/$file"));
            $threads[] = sprintf('%s in %s, syscall %s', $read('comm'), $read('wchan'), strtok($read('syscall'), ' '));
        }

        return [] === $threads ? 'gone' : implode('; ', $threads);
    }
}
