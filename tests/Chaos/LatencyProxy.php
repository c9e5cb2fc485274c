<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

/**
 * A TCP proxy in front of a redis-server that can delay the bytes it forwards, per direction.
 *
 * Runs in its own php process (serve()), driven over its stdin by lines: "delay <up_ms> <down_ms>" (0 0 = none) and
 * "quit"; every command is acknowledged with "ok <command>" on stdout, the first line is "listening <port>".
 * A connection whose other side is gone (upstream killed by CLIENT KILL or a restart, or upstream unreachable) is
 * closed at once on both sides, like a reset: the client sees its connection drop.
 */
final class LatencyProxy
{
    /** @var array<int, array{down: resource, up: resource, toUp: list<array{int, string}>, toDown: list<array{int, string}>}> */
    private array $pairs = [];

    private int $upDelayNs = 0;

    private int $downDelayNs = 0;

    private function __construct(private readonly int $upstreamPort)
    {
    }

    public static function serve(int $upstreamPort): void
    {
        (new self($upstreamPort))->loop();
    }

    private function loop(): void
    {
        $server = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
        if (false === $server) {
            fwrite(STDERR, "proxy: cannot listen: $error\n");
            exit(1);
        }
        stream_set_blocking($server, false);
        $name = (string) stream_socket_get_name($server, false);
        echo 'listening ', substr($name, strrpos($name, ':') + 1), "\n";
        stream_set_blocking(STDIN, false);
        $control = '';

        while (true) {
            $now = hrtime(true);
            $this->flushDue($now);
            $read = [$server, STDIN];
            $write = [];
            $next = null;
            foreach ($this->pairs as $pair) {
                $read[] = $pair['down'];
                $read[] = $pair['up'];
                foreach (['toUp' => 'up', 'toDown' => 'down'] as $queue => $side) {
                    if ([] !== $pair[$queue]) {
                        $due = $pair[$queue][0][0];
                        if ($due <= $now) {
                            $write[] = $pair[$side];
                        } else {
                            $next = null === $next ? $due : min($next, $due);
                        }
                    }
                }
            }
            $wait = null === $next ? 100_000_000 : max(0, min(100_000_000, $next - $now));
            $except = null;
            if ([] === $write) {
                $write = null;
            }
            $ready = @stream_select($read, $write, $except, 0, intdiv($wait, 1000));
            if (false === $ready) {
                continue;
            }
            foreach ($read as $stream) {
                if ($stream === $server) {
                    $this->accept($server);
                } elseif (STDIN === $stream) {
                    $chunk = fread(STDIN, 4096);
                    if ('' === $chunk || false === $chunk) {
                        if (feof(STDIN)) {
                            return;
                        }
                        continue;
                    }
                    $control .= $chunk;
                    while (false !== ($nl = strpos($control, "\n"))) {
                        $line = trim(substr($control, 0, $nl));
                        $control = substr($control, $nl + 1);
                        if ('quit' === $line) {
                            echo "ok quit\n";

                            return;
                        }
                        if (1 === preg_match('/^delay (\d+) (\d+)$/', $line, $m)) {
                            $this->upDelayNs = (int) $m[1] * 1_000_000;
                            $this->downDelayNs = (int) $m[2] * 1_000_000;
                        }
                        echo "ok $line\n";
                    }
                } else {
                    $this->forward($stream);
                }
            }
        }
    }

    /**
     * @param resource $server
     */
    private function accept($server): void
    {
        $down = @stream_socket_accept($server, 0);
        if (false === $down) {
            return;
        }
        $up = @stream_socket_client('tcp://127.0.0.1:'.$this->upstreamPort, $errno, $error, 1.0);
        if (false === $up) {
            fclose($down);

            return;
        }
        stream_set_blocking($down, false);
        stream_set_blocking($up, false);
        stream_set_write_buffer($down, 0);
        stream_set_write_buffer($up, 0);
        $this->pairs[(int) $down] = ['down' => $down, 'up' => $up, 'toUp' => [], 'toDown' => []];
    }

    /**
     * @param resource $stream
     */
    private function forward($stream): void
    {
        foreach ($this->pairs as $id => $pair) {
            $fromDown = $pair['down'] === $stream;
            if (!$fromDown && $pair['up'] !== $stream) {
                continue;
            }
            $chunk = @fread($stream, 65536);
            if (false === $chunk || ('' === $chunk && feof($stream))) {
                $this->drop($id);

                return;
            }
            if ('' === $chunk) {
                return;
            }
            if ($fromDown) {
                $this->pairs[$id]['toUp'][] = [hrtime(true) + $this->upDelayNs, $chunk];
            } else {
                $this->pairs[$id]['toDown'][] = [hrtime(true) + $this->downDelayNs, $chunk];
            }
            $this->flushDue(hrtime(true));

            return;
        }
    }

    private function flushDue(int $now): void
    {
        foreach (array_keys($this->pairs) as $id) {
            foreach (['toUp' => 'up', 'toDown' => 'down'] as $queue => $side) {
                while (isset($this->pairs[$id]) && [] !== $this->pairs[$id][$queue] && $this->pairs[$id][$queue][0][0] <= $now) {
                    $data = $this->pairs[$id][$queue][0][1];
                    $written = @fwrite($this->pairs[$id][$side], $data);
                    if (false === $written) {
                        $this->drop($id);
                        break;
                    }
                    if ($written < \strlen($data)) {
                        $this->pairs[$id][$queue][0][1] = substr($data, $written);
                        break;
                    }
                    array_shift($this->pairs[$id][$queue]);
                }
            }
        }
    }

    private function drop(int $id): void
    {
        if (!isset($this->pairs[$id])) {
            return;
        }
        @fclose($this->pairs[$id]['down']);
        @fclose($this->pairs[$id]['up']);
        unset($this->pairs[$id]);
    }
}
