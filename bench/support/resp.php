<?php

/*
 * A minimal RESP2 client on a plain socket, for a scenario's own measuring connection (INFO commandstats, CONFIG
 * RESETSTAT, MONITOR, the clean-up of its keys). It depends on neither phpredis nor Predis, so the counts and the
 * clean-up work whichever client library is installed. Every call waits for its reply.
 */

declare(strict_types=1);

final class Resp
{
    /** @var resource */
    private $socket;

    public function __construct(string $host, int $port)
    {
        $socket = @stream_socket_client("tcp://$host:$port", $errno, $error, 2.0);
        if ($socket === false) {
            throw new RuntimeException("cannot connect to Redis at $host:$port: $error");
        }
        stream_set_timeout($socket, 30);
        $this->socket = $socket;
    }

    /** host:port of this end of the connection, as MONITOR shows it. */
    public function localAddress(): string
    {
        return (string) stream_socket_get_name($this->socket, false);
    }

    public function send(string ...$args): void
    {
        $out = '*' . count($args) . "\r\n";
        foreach ($args as $arg) {
            $out .= '$' . strlen($arg) . "\r\n" . $arg . "\r\n";
        }
        for ($written = 0; $written < strlen($out); $written += $n) {
            $n = fwrite($this->socket, substr($out, $written));
            if ($n === false || $n === 0) {
                throw new RuntimeException('Redis connection lost while writing');
            }
        }
    }

    /** @return mixed the reply; an error reply is thrown as a RuntimeException */
    public function call(string ...$args): mixed
    {
        $this->send(...$args);

        return $this->read();
    }

    public function readLine(): string
    {
        $line = fgets($this->socket);
        if ($line === false) {
            throw new RuntimeException('Redis connection lost or timed out while reading');
        }

        return rtrim($line, "\r\n");
    }

    public function read(): mixed
    {
        $line = $this->readLine();
        $payload = substr($line, 1);
        switch ($line[0] ?? '') {
            case '+':
                return $payload;
            case '-':
                throw new RuntimeException("Redis error: $payload");
            case ':':
                return (int) $payload;
            case '$':
                if ((int) $payload < 0) {
                    return null;
                }
                $data = '';
                while (strlen($data) < (int) $payload + 2) {
                    $chunk = fread($this->socket, (int) $payload + 2 - strlen($data));
                    if ($chunk === false || $chunk === '') {
                        throw new RuntimeException('Redis connection lost while reading');
                    }
                    $data .= $chunk;
                }

                return substr($data, 0, -2);
            case '*':
                if ((int) $payload < 0) {
                    return null;
                }
                $items = [];
                for ($i = 0; $i < (int) $payload; ++$i) {
                    $items[] = $this->read();
                }

                return $items;
        }
        throw new RuntimeException("unexpected reply from Redis: $line");
    }

    /** @return list<string> every key whose name matches the glob $pattern (SCAN) */
    public function scan(string $pattern): array
    {
        $found = [];
        $cursor = '0';
        do {
            [$cursor, $keys] = $this->call('SCAN', $cursor, 'MATCH', $pattern, 'COUNT', '1000');
            array_push($found, ...$keys);
        } while ($cursor !== '0');

        return $found;
    }

    /** Deletes $keys, 500 per DEL. */
    public function delete(array $keys): void
    {
        foreach (array_chunk($keys, 500) as $chunk) {
            $this->call('DEL', ...$chunk);
        }
    }

    /**
     * INFO commandstats, most called first, without what a measuring connection sends itself (INFO, CONFIG ...).
     *
     * @return array<string, array{int, int}> per command name (e.g. "evalsha", "script|load"): [calls, µs Redis spent
     *   executing them]
     */
    public function commandStats(): array
    {
        $stats = [];
        foreach (explode("\n", (string) $this->call('INFO', 'commandstats')) as $line) {
            if (preg_match('/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/', trim($line), $m) === 1
                && $m[1] !== 'info' && !str_starts_with($m[1], 'config')) {
                $stats[$m[1]] = [(int) $m[2], (int) $m[3]];
            }
        }
        uasort($stats, static fn (array $x, array $y): int => $y[0] <=> $x[0]);

        return $stats;
    }

    public function close(): void
    {
        fclose($this->socket);
    }
}
