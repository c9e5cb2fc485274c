<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A fresh php process (not a fork) running a snippet of code, with the extension loaded like the test process.
 *
 * The snippet sees its inputs in $vars (any values, binary strings included) and talks over STDIN/STDOUT.
 * The command line comes from deadbolt_php_command() in tests/bootstrap.php.
 */
final class PhpProcess
{
    /** @var resource */
    private $process;

    /** @var array<int, resource> */
    private array $pipes;

    private string $stdout = '';

    private string $stderr = '';

    private bool $stdoutClosed = false;

    private bool $stderrClosed = false;

    private ?int $exitCode = null;

    private function __construct(private readonly string $script, private readonly int $parentPid)
    {
    }

    /**
     * @param array<string, mixed> $vars
     * @param list<string>|null    $command php and its options, instead of deadbolt_php_command($withExtension)
     */
    public static function start(string $code, array $vars = [], bool $withExtension = true, ?array $command = null): self
    {
        $base = tempnam(sys_get_temp_dir(), 'deadbolt-child-');
        $script = $base.'.php';
        unlink($base);
        file_put_contents($script, sprintf(
            "<?php\ndeclare(strict_types=1);\n\$vars = unserialize(base64_decode('%s'));\n%s\n",
            base64_encode(serialize($vars)),
            $code
        ));

        $self = new self($script, posix_getpid());
        $command ??= deadbolt_php_command($withExtension);
        $command[] = $script;
        $process = proc_open($command, [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
        if (false === $process) {
            throw new \RuntimeException('proc_open() failed for '.implode(' ', $command));
        }
        $self->process = $process;
        $self->pipes = $pipes;
        stream_set_blocking($pipes[1], false);
        stream_set_blocking($pipes[2], false);

        return $self;
    }

    /**
     * Runs the code to completion.
     *
     * @param array<string, mixed> $vars
     * @param list<string>|null    $command php and its options, instead of deadbolt_php_command($withExtension)
     *
     * @return array{exit: int, stdout: string, stderr: string}
     */
    public static function run(string $code, array $vars = [], bool $withExtension = true, float $timeout = 120.0, ?array $command = null): array
    {
        $process = self::start($code, $vars, $withExtension, $command);
        $process->closeStdin();
        $exit = $process->waitForExit($timeout);

        return ['exit' => $exit, 'stdout' => $process->stdout(), 'stderr' => $process->stderr()];
    }

    /**
     * Asks a fresh process whether it can take the lock right now (non-blocking), then lets it exit.
     *
     * @param 'write'|'read' $mode
     */
    public static function canAcquire(string $lockDir, string $resource, string $mode = 'write'): bool
    {
        $result = self::run(<<<'PHP'
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\FlockStore($vars['dir']));
            $lock = $factory->createLock($vars['resource']);
            $acquired = 'read' === $vars['mode'] ? $lock->acquireRead(false) : $lock->acquire(false);
            echo $acquired ? 'acquired' : 'refused';
            PHP, ['dir' => $lockDir, 'resource' => $resource, 'mode' => $mode]);
        if (0 !== $result['exit'] || !\in_array($result['stdout'], ['acquired', 'refused'], true)) {
            throw new \PHPUnit\Framework\AssertionFailedError(sprintf(
                "The probe process failed (exit %d).\nstdout: %s\nstderr: %s",
                $result['exit'],
                $result['stdout'],
                $result['stderr']
            ));
        }

        return 'acquired' === $result['stdout'];
    }

    /**
     * Writes a line to the child's stdin. A child that has gone (a broken pipe) is a RuntimeException that tells how
     * it ended and what it wrote to stderr, not a bare warning.
     */
    public function writeLine(string $line): void
    {
        if (false !== @fwrite($this->pipes[0], $line."\n") && @fflush($this->pipes[0])) {
            return;
        }
        $why = error_get_last()['message'] ?? 'write failed';
        $exit = 'still running';
        try {
            $exit = 'exit '.$this->waitForExit(5.0);
        } catch (\RuntimeException) {
        }
        throw new \RuntimeException(sprintf("Cannot write to the child (%s; %s).\nstdout: %s\nstderr: %s", $why, $exit, $this->stdout, $this->stderr));
    }

    public function closeStdin(): void
    {
        if (isset($this->pipes[0]) && \is_resource($this->pipes[0])) {
            fclose($this->pipes[0]);
        }
    }

    /**
     * Waits for the next line on the child's stdout.
     */
    public function readLine(float $timeout = 60.0): string
    {
        $deadline = hrtime(true) + (int) ($timeout * 1e9);
        while (false === ($newline = strpos($this->stdout, "\n"))) {
            if ($this->stdoutClosed) {
                throw new \RuntimeException(sprintf("The child closed stdout before a full line.\nstdout: %s\nstderr: %s", $this->stdout, $this->stderr));
            }
            if (hrtime(true) > $deadline) {
                throw new \RuntimeException(sprintf("No line from the child within %.0f s.\nstdout: %s\nstderr: %s", $timeout, $this->stdout, $this->stderr));
            }
            $this->pump(0.2);
        }
        $line = substr($this->stdout, 0, $newline);
        $this->stdout = (string) substr($this->stdout, $newline + 1);

        return $line;
    }

    /**
     * Reads stdout and stderr to their end, then reaps the process. Leaves stdin as it is: a grandchild may
     * still be reading it.
     */
    public function waitForExit(float $timeout = 120.0): int
    {
        $deadline = hrtime(true) + (int) ($timeout * 1e9);
        while (!$this->stdoutClosed || !$this->stderrClosed) {
            if (hrtime(true) > $deadline) {
                $this->kill();
                throw new \RuntimeException(sprintf("The child ran longer than %.0f s: killed.\nstdout: %s\nstderr: %s", $timeout, $this->stdout, $this->stderr));
            }
            $this->pump(0.2);
        }
        while (null === $this->exitCode) {
            $status = proc_get_status($this->process);
            if (!$status['running']) {
                $this->exitCode = $status['signaled'] ? 128 + $status['termsig'] : $status['exitcode'];
                break;
            }
            if (hrtime(true) > $deadline) {
                $this->kill();
                throw new \RuntimeException('The child closed its output but did not exit: killed.');
            }
            usleep(1000);
        }
        @unlink($this->script);

        return $this->exitCode;
    }

    /** The child's pid (php itself: proc_open() runs the command without a shell). */
    public function pid(): int
    {
        return proc_get_status($this->process)['pid'];
    }

    public function stdout(): string
    {
        return $this->stdout;
    }

    public function stderr(): string
    {
        return $this->stderr;
    }

    /**
     * Kills the process if it still runs (cleanup after a failed test). Does nothing in any other process.
     */
    public function kill(): void
    {
        if (posix_getpid() !== $this->parentPid) {
            return;
        }
        $this->closeStdin();
        if (null === $this->exitCode && proc_get_status($this->process)['running']) {
            proc_terminate($this->process, SIGKILL);
        }
        @unlink($this->script);
    }

    private function pump(float $timeout): void
    {
        $read = [];
        if (!$this->stdoutClosed) {
            $read[] = $this->pipes[1];
        }
        if (!$this->stderrClosed) {
            $read[] = $this->pipes[2];
        }
        if ([] === $read) {
            return;
        }
        $write = $except = null;
        if (0 >= (int) @stream_select($read, $write, $except, 0, (int) ($timeout * 1e6))) {
            return;
        }
        foreach ($read as $pipe) {
            $chunk = (string) fread($pipe, 65536);
            if ($pipe === $this->pipes[1]) {
                $this->stdout .= $chunk;
                $this->stdoutClosed = '' === $chunk && feof($pipe);
            } else {
                $this->stderr .= $chunk;
                $this->stderrClosed = '' === $chunk && feof($pipe);
            }
        }
    }
}
