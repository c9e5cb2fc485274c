<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * One end of a line-based pipe between a test and a process it started: the handshake that replaces sleeps.
 */
final class Channel
{
    /** @var resource */
    private $stream;

    private string $buffer = '';

    /**
     * @param resource $stream
     */
    public function __construct($stream)
    {
        $this->stream = $stream;
        stream_set_blocking($stream, false);
    }

    public function send(string $message): void
    {
        $data = $message."\n";
        while ('' !== $data) {
            $write = [$this->stream];
            $read = $except = null;
            if (false === @stream_select($read, $write, $except, 30)) {
                throw new \RuntimeException('stream_select() failed while sending '.$message);
            }
            $written = @fwrite($this->stream, $data);
            if (false === $written) {
                throw new \RuntimeException('The other side closed the channel before receiving '.$message);
            }
            $data = substr($data, $written);
        }
    }

    /**
     * Waits for the next line. The timeout is a safety net against a hung test, not a measure of anything.
     *
     * @throws \RuntimeException on timeout or when the other side closed the channel
     */
    public function receive(float $timeout = 60.0): string
    {
        $deadline = hrtime(true) + (int) ($timeout * 1e9);
        while (false === ($newline = strpos($this->buffer, "\n"))) {
            $left = $deadline - hrtime(true);
            if ($left <= 0) {
                throw new \RuntimeException(sprintf('No message within %.0f s (partial: "%s")', $timeout, $this->buffer));
            }
            $read = [$this->stream];
            $write = $except = null;
            $ready = @stream_select($read, $write, $except, intdiv($left, 1000000000), intdiv($left % 1000000000, 1000));
            if (false === $ready) {
                throw new \RuntimeException('stream_select() failed while receiving');
            }
            if (0 === $ready) {
                continue;
            }
            $chunk = fread($this->stream, 65536);
            if ('' === $chunk || false === $chunk) {
                if (feof($this->stream)) {
                    throw new \RuntimeException(sprintf('The other side closed the channel (partial: "%s")', $this->buffer));
                }
                continue;
            }
            $this->buffer .= $chunk;
        }
        $line = substr($this->buffer, 0, $newline);
        $this->buffer = (string) substr($this->buffer, $newline + 1);

        return $line;
    }

    /**
     * Whether a message (or EOF) is already waiting, without waiting for one.
     */
    public function hasPending(): bool
    {
        if ('' !== $this->buffer) {
            return true;
        }
        $read = [$this->stream];
        $write = $except = null;

        return 0 < (int) @stream_select($read, $write, $except, 0, 0);
    }

    public function close(): void
    {
        if (\is_resource($this->stream)) {
            fclose($this->stream);
        }
    }
}
