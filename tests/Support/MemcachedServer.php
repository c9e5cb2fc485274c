<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private memcached: free loopback port, no UDP, 16 MB. A direct child of the test process, killed by stop() and at
 * the latest when this object dies; restart() brings it back empty on the same port. Copies of this object in forked
 * children never touch the server.
 */
final class MemcachedServer
{
    use ServerProcess;

    private function __construct(public readonly int $port)
    {
        $this->ownerPid = posix_getpid();
    }

    public static function start(): self
    {
        $lastError = '';
        // The free port may be taken between asking for it and memcached binding it: try another one then.
        for ($attempt = 0; $attempt < 5; ++$attempt) {
            $server = new self(RedisServer::freePort());
            try {
                $server->launch();

                return $server;
            } catch (\RuntimeException $e) {
                $lastError = $e->getMessage();
            }
        }
        throw new \RuntimeException('Could not start a private memcached: '.$lastError);
    }

    /**
     * memcached://127.0.0.1:PORT plus $suffix ("?prefix_key=app:").
     */
    public function dsn(string $suffix = ''): string
    {
        return 'memcached://127.0.0.1:'.$this->port.$suffix;
    }

    /**
     * A new \Memcached on this server (text protocol, as symfony/lock's tests use it).
     */
    public function client(): \Memcached
    {
        $memcached = new \Memcached();
        $memcached->addServer('127.0.0.1', $this->port);

        return $memcached;
    }

    public function __destruct()
    {
        if (posix_getpid() === $this->ownerPid) {
            $this->stop();
        }
    }

    private function launch(): void
    {
        $command = ['memcached', '-l', '127.0.0.1', '-p', (string) $this->port, '-U', '0', '-m', '16'];
        if (0 === posix_geteuid()) {
            $command = [...$command, '-u', 'root']; // memcached refuses root unless told which user to be
        }
        $null = ['file', '/dev/null', 'a'];
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => $null, 2 => $null], $pipes);
        if (false === $process) {
            throw new \RuntimeException('proc_open(memcached) failed');
        }
        $this->process = $process;
        $deadline = hrtime(true) + 10_000_000_000;
        while (hrtime(true) < $deadline) {
            if (!proc_get_status($process)['running']) {
                proc_close($process);
                $this->process = null;
                throw new \RuntimeException("memcached exited at start on port {$this->port}");
            }
            if ($this->answers()) {
                return;
            }
            usleep(20_000);
        }
        $this->stop();
        throw new \RuntimeException("memcached did not answer on port {$this->port} within 10 s");
    }

    private function answers(): bool
    {
        $socket = @stream_socket_client('tcp://127.0.0.1:'.$this->port, $errno, $error, 0.5);
        if (false === $socket) {
            return false;
        }
        stream_set_timeout($socket, 1);
        fwrite($socket, "version\r\n");
        $reply = fgets($socket);
        fclose($socket);

        return \is_string($reply) && str_starts_with($reply, 'VERSION ');
    }
}
