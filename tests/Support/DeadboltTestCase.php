<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

use PHPUnit\Framework\TestCase;

/**
 * Base of the suites: a private temp directory per test, and child processes that never outlive their test.
 */
abstract class DeadboltTestCase extends TestCase
{
    /** @var list<string> */
    private array $tempDirs = [];

    /** @var list<ForkedChild|PhpProcess> */
    private array $children = [];

    /**
     * A fresh empty directory, removed after the test.
     */
    protected function tempDir(): string
    {
        $dir = sys_get_temp_dir().'/deadbolt-test-'.bin2hex(random_bytes(8));
        if (!mkdir($dir, 0777, true)) {
            throw new \RuntimeException('Cannot create '.$dir);
        }
        $this->tempDirs[] = $dir;

        return $dir;
    }

    /**
     * A store of the given kind; FlockStore gets a private directory.
     *
     * @param 'flock'|'memory' $kind
     */
    protected function newStore(string $kind): object
    {
        return match ($kind) {
            'flock' => new \Deadbolt\Store\FlockStore($this->tempDir()),
            'memory' => new \Deadbolt\Store\InMemoryStore(),
        };
    }

    /**
     * @return iterable<string, array{'flock'|'memory'}>
     */
    public static function storeKinds(): iterable
    {
        yield 'FlockStore' => ['flock'];
        yield 'InMemoryStore' => ['memory'];
    }

    /**
     * @param callable(Channel): void $body runs in a pcntl_fork() child
     */
    protected function fork(callable $body): ForkedChild
    {
        return $this->children[] = ForkedChild::start($body);
    }

    /**
     * The store a forked child uses where the parent uses $store: the same object, for every store that keeps a
     * forked child apart by itself; one of the child's own where the store runs on a connection of the application's.
     */
    protected function storeInAChild(object $store): object
    {
        return $store;
    }

    /**
     * @param array<string, mixed> $vars
     * @param list<string>|null    $command php and its options (PhpProcess::start)
     */
    protected function spawn(string $code, array $vars = [], ?array $command = null): PhpProcess
    {
        return $this->children[] = PhpProcess::start($code, $vars, command: $command);
    }

    /**
     * Runs a child PHP under valgrind where it is installed (an invalid read or write is then an error: exit 99 and
     * a failed assertion), else plainly. For tests whose bug shows as a memory error before it shows as a crash.
     *
     * @param array<string, mixed> $vars
     *
     * @return array{exit: int, stdout: string, stderr: string}
     */
    protected function runChecked(string $code, array $vars = [], float $timeout = 60.0): array
    {
        $valgrind = trim((string) shell_exec('command -v valgrind'));
        if ('' === $valgrind || false !== getenv('USE_ZEND_ALLOC')) {
            return PhpProcess::run($code, $vars, timeout: $timeout);
        }
        // The suppressions of the valgrind suite: the dynamic loader's and PHP's known noise, never a frame of Deadbolt.
        $suppressions = '--suppressions='.\dirname(__DIR__, 2).'/scripts/valgrind.supp';
        $command = array_merge([$valgrind, '-q', '--error-exitcode=99', '--leak-check=no', $suppressions], deadbolt_php_command());
        putenv('USE_ZEND_ALLOC=0');
        try {
            $result = PhpProcess::run($code, $vars, timeout: 2 * $timeout, command: $command);
        } finally {
            putenv('USE_ZEND_ALLOC');
        }
        $this->assertStringNotContainsString('Invalid read', $result['stderr']);
        $this->assertStringNotContainsString('Invalid write', $result['stderr']);

        return $result;
    }

    /**
     * The fields of /proc/PID/stat after the command name: [0] the state, [1] the parent's pid, and so on; null when
     * the process is gone. A process that exits between the directory listing and the read gives an empty or
     * missing file, which callers must treat as gone rather than index into.
     *
     * @return list<string>|null
     */
    protected static function procStat(int $pid): ?array
    {
        $stat = @file_get_contents("/proc/$pid/stat");
        // The state follows the parenthesised command name, which may itself contain spaces or parentheses.
        $close = false === $stat ? false : strrpos($stat, ')');
        if (false === $close) {
            return null;
        }
        $fields = explode(' ', substr($stat, $close + 2));

        return \count($fields) >= 2 ? $fields : null;
    }

    /**
     * Waits until a process sleeps in the kernel (for instance in flock(2)), so that the next step really happens
     * while it waits. Best effort with a bound: returns false if that did not show within the bound, and the
     * caller goes on anyway; correctness never depends on it.
     */
    protected static function waitUntilSleeping(int $pid, float $bound = 10.0): bool
    {
        $deadline = hrtime(true) + (int) ($bound * 1e9);
        while (hrtime(true) < $deadline) {
            $fields = self::procStat($pid);
            if (null === $fields) {
                return false;
            }
            if ('S' === $fields[0]) {
                return true;
            }
            usleep(500);
        }

        return false;
    }

    /**
     * @after
     */
    #[\PHPUnit\Framework\Attributes\After]
    protected function cleanUpChildrenAndTempDirs(): void
    {
        foreach ($this->children as $child) {
            $child->kill();
        }
        $this->children = [];
        foreach ($this->tempDirs as $dir) {
            self::removeTree($dir);
        }
        $this->tempDirs = [];
    }

    private static function removeTree(string $path): void
    {
        if (is_dir($path) && !is_link($path)) {
            foreach (scandir($path) ?: [] as $entry) {
                if ('.' !== $entry && '..' !== $entry) {
                    self::removeTree($path.'/'.$entry);
                }
            }
            @rmdir($path);
        } else {
            @unlink($path);
        }
    }
}
