<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private redis-server for one test: free loopback port, unix socket, no persistence, in its own temp dir.
 *
 * For the tests that need a server of their own (a password, an eviction policy, a server to stop and bring back).
 * The shared server of the suite is {@see SharedRedis}. The process is a direct child of the test process (not
 * daemonized), killed by stop() and at the latest when this object dies; restart() brings it back on the same port
 * and socket, so DSNs and client objects built before stay valid. Copies of this object in forked children never
 * touch the server.
 */
final class RedisServer
{
    use ServerProcess;

    /**
     * @param array<string, string> $options extra redis-server options without the dashes, e.g. ['requirepass' => 'x']
     * @param list<string>|null     $sentinel a sentinel's own config lines ("sentinel monitor ..."), null for a server
     */
    private function __construct(
        public readonly string $dir,
        public readonly int $port,
        private readonly array $options,
        private readonly ?array $sentinel = null,
    ) {
        $this->ownerPid = posix_getpid();
    }

    /**
     * @param array<string, string> $options extra redis-server options without the dashes, e.g. ['requirepass' => 'x']
     */
    public static function start(array $options = []): self
    {
        return self::launchIn(fn (string $dir, int $port) => new self($dir, $port, $options));
    }

    /**
     * A sentinel (redis-server --sentinel) watching the primary at 127.0.0.1:$primaryPort as $service, quick to
     * call it down (500 ms) and to fail over again; $lines are more sentinel config lines (a requirepass...).
     *
     * @param list<string> $lines
     */
    public static function startSentinel(string $service, int $primaryPort, int $quorum = 2, array $lines = []): self
    {
        $own = [
            "sentinel monitor $service 127.0.0.1 $primaryPort $quorum",
            "sentinel down-after-milliseconds $service 500",
            "sentinel failover-timeout $service 2000",
            ...$lines,
        ];

        return self::launchIn(fn (string $dir, int $port) => new self($dir, $port, [], $own));
    }

    /**
     * @param \Closure(string, int): self $make
     */
    private static function launchIn(\Closure $make): self
    {
        $lastError = '';
        // The free port may be taken between asking for it and redis binding it: try another one then, in a directory
        // of its own (a failed attempt's server, once dropped, removes its directory: a shared one would be gone, and
        // every later attempt would fail to write its config).
        for ($attempt = 0; $attempt < 5; ++$attempt) {
            $dir = sys_get_temp_dir().'/deadbolt-redis-'.bin2hex(random_bytes(6));
            if (!mkdir($dir, 0700, true)) {
                throw new \RuntimeException('Cannot create '.$dir);
            }
            $server = $make($dir, self::freePort());
            try {
                $server->launch();

                return $server;
            } catch (\RuntimeException $e) {
                $lastError = $e->getMessage();
                $server->process = null;
            }
        }
        throw new \RuntimeException('Could not start a private redis-server: '.$lastError);
    }

    public function socket(): string
    {
        return $this->dir.'/redis.sock';
    }

    /**
     * redis://127.0.0.1:PORT plus $suffix ("/3", "?timeout=1"...); credentials go in $userInfo ("user:pass").
     */
    public function dsn(string $suffix = '', string $userInfo = ''): string
    {
        return 'redis://'.('' !== $userInfo ? $userInfo.'@' : '').'127.0.0.1:'.$this->port.$suffix;
    }

    public function isRunning(): bool
    {
        return null !== $this->process && proc_get_status($this->process)['running'];
    }

    /**
     * A new phpredis connection to this server (authenticated with $password when given).
     */
    public function client(?string $password = null): \Redis
    {
        $redis = new \Redis();
        $redis->connect('127.0.0.1', $this->port, 5.0);
        if (null !== $password) {
            $redis->auth($password);
        }

        return $redis;
    }

    /**
     * Freezes the server (SIGSTOP): connections stay open, nothing answers, until resume().
     */
    public function pause(): void
    {
        $this->signal(SIGSTOP);
    }

    public function resume(): void
    {
        $this->signal(SIGCONT);
    }

    public function __destruct()
    {
        if (posix_getpid() !== $this->ownerPid) {
            return;
        }
        $this->stop();
        foreach (glob($this->dir.'/*') ?: [] as $file) {
            @unlink($file);
        }
        @rmdir($this->dir);
    }

    private function signal(int $signal): void
    {
        if (null === $this->process || posix_getpid() !== $this->ownerPid) {
            throw new \LogicException('The server does not run in this process');
        }
        posix_kill(proc_get_status($this->process)['pid'], $signal);
    }

    private function launch(): void
    {
        // Every option goes in a config file only this user can read (a password among them): never on a command
        // line, where `ps` shows it and where Redis 8 refuses values with quotes in them. The test's own options
        // come last, so they override the defaults.
        $options = [
            'port' => (string) $this->port,
            'bind' => '127.0.0.1',
            'save' => '',
            'appendonly' => 'no',
            'unixsocket' => $this->socket(),
            'unixsocketperm' => '700',
            'dir' => $this->dir,
            'logfile' => $this->dir.'/redis.log',
            'daemonize' => 'no',
        ];
        if ('aarch64' === php_uname('m')) {
            // Redis refuses to start on arm64 when its copy-on-write self-test fails (it guards background saves
            // against an arm64 kernel bug); under qemu's user-mode emulation that test fails with no such kernel in
            // play. These servers never save (save "", no AOF).
            $options['ignore-warnings'] = 'ARM64-COW-BUG';
        }
        if (null !== $this->sentinel) {
            // A sentinel rewrites its config file as it learns the topology: its own lines, not a server's.
            $options = array_intersect_key($options, array_flip(['port', 'bind', 'dir', 'logfile', 'daemonize']));
        }
        $lines = '';
        foreach ([$options, $this->options] as $set) {
            foreach ($set as $name => $value) {
                $lines .= $name.' '.self::configValue($value)."\n";
            }
        }
        foreach ($this->sentinel ?? [] as $line) {
            $lines .= $line."\n";
        }
        $config = $this->dir.'/redis.conf';
        if (false === file_put_contents($config, $lines) || !chmod($config, 0600)) {
            throw new \RuntimeException('Cannot write '.$config);
        }
        $command = [deadbolt_redis_binary('server'), $config, ...(null !== $this->sentinel ? ['--sentinel'] : [])];
        $null = ['file', '/dev/null', 'a'];
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => $null, 2 => $null], $pipes);
        if (false === $process) {
            throw new \RuntimeException('proc_open(redis-server) failed');
        }
        $this->process = $process;
        $deadline = hrtime(true) + 10_000_000_000;
        while (hrtime(true) < $deadline) {
            if (!proc_get_status($process)['running']) {
                proc_close($process);
                $this->process = null;
                $log = @file_get_contents($this->dir.'/redis.log');
                throw new \RuntimeException("redis-server exited at start on port {$this->port}: ".substr((string) $log, -500));
            }
            if ($this->answers()) {
                return;
            }
            usleep(20_000);
        }
        $this->stop();
        throw new \RuntimeException("redis-server did not answer on port {$this->port} within 10 s");
    }

    /**
     * $value as a double-quoted redis.conf string: quotes and backslashes escaped, anything unprintable as \xHH.
     */
    private static function configValue(string $value): string
    {
        $quoted = '"';
        for ($i = 0, $n = \strlen($value); $i < $n; ++$i) {
            $byte = \ord($value[$i]);
            $quoted .= match (true) {
                '"' === $value[$i], '\\' === $value[$i] => '\\'.$value[$i],
                $byte < 0x20 || $byte >= 0x7F => sprintf('\\x%02x', $byte),
                default => $value[$i],
            };
        }

        return $quoted.'"';
    }

    /**
     * Whether the server answers PING (an error reply such as NOAUTH counts: it is up).
     */
    private function answers(): bool
    {
        $socket = @stream_socket_client('tcp://127.0.0.1:'.$this->port, $errno, $error, 0.5);
        if (false === $socket) {
            return false;
        }
        stream_set_timeout($socket, 1);
        fwrite($socket, "PING\r\n");
        $reply = fgets($socket);
        fclose($socket);

        return \is_string($reply) && ('+' === $reply[0] || '-' === $reply[0]);
    }

    /**
     * A TCP port nothing listens on right now (for a second listener, such as tls-port).
     */
    public static function freePort(): int
    {
        $socket = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        if (false === $socket) {
            throw new \RuntimeException("Cannot find a free port: $error");
        }
        $name = stream_socket_get_name($socket, false);
        fclose($socket);

        return (int) substr((string) $name, strrpos((string) $name, ':') + 1);
    }
}
