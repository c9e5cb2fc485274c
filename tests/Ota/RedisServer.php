<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Ota;

/**
 * A private redis-server for one test, separate from the suite's (DEADBOLT_REDIS_PORT): it can be stopped in the
 * middle of a test, or require a password. Loopback only, no persistence, everything in its own temp directory.
 *
 * The password goes into a config file (mode 0600), never onto the command line where `ps` would show it.
 * stop() is idempotent and acts only in the process that started the server (a forked child that inherits this
 * object and exits does not stop it).
 */
final class RedisServer
{
    private bool $stopped = false;

    private function __construct(
        public readonly int $port,
        private readonly string $dir,
        private readonly int $pid,
        private readonly int $ownerPid,
    ) {
    }

    public static function start(#[\SensitiveParameter] ?string $password = null): self
    {
        $binary = self::findRedisServer();
        $dir = sys_get_temp_dir() . '/deadbolt-ota-redis-' . bin2hex(random_bytes(6));
        if (!mkdir($dir, 0700, true)) {
            throw new \RuntimeException('Cannot create ' . $dir);
        }
        $lastLog = '';
        for ($attempt = 1; $attempt <= 5; ++$attempt) {
            $port = self::freePort();
            $config = implode("\n", array_filter([
                'port ' . $port,
                'bind 127.0.0.1',
                'save ""',
                'appendonly no',
                'daemonize yes',
                'dir ' . $dir,
                'pidfile ' . $dir . '/redis.pid',
                'logfile ' . $dir . '/redis.log',
                $password !== null ? 'requirepass "' . addcslashes($password, "\"\\") . '"' : null,
            ])) . "\n";
            $configFile = $dir . '/redis.conf';
            touch($configFile);
            chmod($configFile, 0600);
            file_put_contents($configFile, $config);

            $process = proc_open([$binary, $configFile], [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
            if ($process === false) {
                throw new \RuntimeException('proc_open(redis-server) failed');
            }
            $output = stream_get_contents($pipes[1]) . stream_get_contents($pipes[2]);
            fclose($pipes[1]);
            fclose($pipes[2]);
            $exit = proc_close($process); // daemonize: the foreground process exits at once
            if ($exit === 0 && self::waitForPing($port, $password, $dir . '/redis.pid')) {
                return new self($port, $dir, (int) trim((string) file_get_contents($dir . '/redis.pid')), getmypid());
            }
            $lastLog = $output . (is_file($dir . '/redis.log') ? (string) file_get_contents($dir . '/redis.log') : '');
            if (is_file($dir . '/redis.pid')) {
                self::terminate((int) trim((string) file_get_contents($dir . '/redis.pid')));
            }
        }
        self::removeDir($dir);

        throw new \RuntimeException("redis-server did not start:\n" . $lastLog);
    }

    /** Stops the server and waits until it is gone; idempotent. */
    public function stop(): void
    {
        if ($this->stopped || getmypid() !== $this->ownerPid) {
            return;
        }
        $this->stopped = true;
        self::terminate($this->pid);
        self::removeDir($this->dir);
    }

    public function isRunning(): bool
    {
        return !$this->stopped && posix_kill($this->pid, 0);
    }

    public function __destruct()
    {
        $this->stop();
    }

    private static function findRedisServer(): string
    {
        $server = deadbolt_redis_binary('server');
        foreach (explode(PATH_SEPARATOR, (string) getenv('PATH')) + [99 => '/usr/bin', 100 => '/usr/sbin'] as $dir) {
            if ($dir !== '' && is_executable($dir . '/' . $server)) {
                return $dir . '/' . $server;
            }
        }

        throw new \RuntimeException('redis-server is not installed (Debian: apt-get install redis-server); these tests need it.');
    }

    private static function freePort(): int
    {
        $server = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        if ($server === false) {
            throw new \RuntimeException('Cannot find a free port: ' . $error);
        }
        $name = (string) stream_socket_get_name($server, false);
        fclose($server);

        return (int) substr($name, strrpos($name, ':') + 1);
    }

    private static function waitForPing(int $port, #[\SensitiveParameter] ?string $password, string $pidFile): bool
    {
        $deadline = hrtime(true) + 10_000_000_000;
        while (hrtime(true) < $deadline) {
            try {
                $redis = new \Redis();
                if ($redis->connect('127.0.0.1', $port, 0.5) && ($password === null || $redis->auth($password)) && $redis->ping() && is_file($pidFile)) {
                    $redis->close();

                    return true;
                }
            } catch (\RedisException) {
                // Not listening yet.
            }
            usleep(20_000);
        }

        return false;
    }

    private static function terminate(int $pid): void
    {
        if ($pid <= 0 || !posix_kill($pid, SIGTERM)) {
            return;
        }
        $deadline = hrtime(true) + 10_000_000_000;
        while (posix_kill($pid, 0)) {
            if (hrtime(true) > $deadline) {
                posix_kill($pid, SIGKILL);
                usleep(100_000);

                return;
            }
            usleep(10_000);
        }
    }

    private static function removeDir(string $dir): void
    {
        foreach (glob($dir . '/*') ?: [] as $file) {
            @unlink($file);
        }
        @rmdir($dir);
    }
}
