<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * Counts the commands clients send to a redis-server, with MONITOR: exact round trips, no timing involved.
 *
 * Commands run by scripts show in MONITOR as coming from "lua" and are not counted. The end of a measure is a marker
 * command sent after the operation by the monitor's own second connection: everything before it in the stream is
 * what the operation sent.
 */
final class RedisMonitor
{
    /** @var resource */
    private $stream;

    private \Redis $marker;

    private string $markerAddress;

    private string $buffer = '';

    public function __construct(int $port)
    {
        $stream = stream_socket_client('tcp://127.0.0.1:'.$port, $errno, $error, 5.0);
        if (false === $stream) {
            throw new \RuntimeException("MONITOR: cannot connect to 127.0.0.1:$port: $error");
        }
        stream_set_timeout($stream, 30);
        fwrite($stream, "MONITOR\r\n");
        if ("+OK\r\n" !== fgets($stream)) {
            throw new \RuntimeException('MONITOR was refused');
        }
        $this->stream = $stream;
        $this->marker = new \Redis();
        $this->marker->connect('127.0.0.1', $port, 5.0);
        if (1 !== preg_match('/\baddr=(\S+)/', (string) $this->marker->rawCommand('CLIENT', 'INFO'), $m)) {
            throw new \RuntimeException('CLIENT INFO gave no addr');
        }
        $this->markerAddress = $m[1];
        // Whatever was in flight before this point is not part of any measure.
        $this->commandsUntilMarker();
    }

    /**
     * Runs $operation and returns the commands (lower-case names, arguments dropped) that clients sent meanwhile.
     *
     * @return list<string>
     */
    public function commandsDuring(callable $operation): array
    {
        $operation();

        return $this->commandsUntilMarker();
    }

    public function close(): void
    {
        if (\is_resource($this->stream)) {
            fclose($this->stream);
        }
        $this->marker->close();
    }

    /**
     * @return list<string>
     */
    private function commandsUntilMarker(): array
    {
        $marker = 'deadbolt-monitor-marker-'.bin2hex(random_bytes(8));
        $this->marker->echo($marker);
        $commands = [];
        while (true) {
            $line = fgets($this->stream);
            if (false === $line) {
                throw new \RuntimeException('MONITOR stream ended before the marker');
            }
            // +1700000000.123456 [0 127.0.0.1:53422] "evalsha" "..." ...
            if (1 !== preg_match('/^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"/', $line, $m)) {
                continue;
            }
            if ($m[1] === $this->markerAddress) {
                if (str_contains($line, $marker)) {
                    return $commands;
                }
                continue;
            }
            if ('lua' !== $m[1]) {
                $commands[] = strtolower($m[2]);
            }
        }
    }
}
