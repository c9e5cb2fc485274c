<?php

declare(strict_types=1);

namespace support;

/**
 * One pooled connection of the `support\Redis` stand-in. client() opens the phpredis `\Redis` on first use, again
 * after the pool recycled it, and again in a forked child (a child never talks on its parent's socket: two
 * processes on one socket read each other's replies).
 */
final class RedisConnection
{
    private ?\Redis $client = null;

    /** The process that opened $client. */
    private int $pid = 0;

    /** Connections opened by this object, for their CLIENT SETNAME. */
    private int $opened = 0;

    /**
     * @param array{host: string, port: int, db: int, password: ?string, timeout: float} $config
     */
    public function __construct(#[\SensitiveParameter] private readonly array $config)
    {
    }

    /**
     * The phpredis client of the current connection. Do not keep it: the next call may return another one.
     *
     * @throws \RedisException when Redis cannot be reached
     */
    public function client(): \Redis
    {
        if ($this->client === null || $this->pid !== getmypid()) {
            // In a forked child the inherited \Redis is dropped without a word on its socket (the parent owns it).
            $this->client = $this->open();
            $this->pid = getmypid();
        }

        return $this->client;
    }

    /** Closes the connection (only in the process that opened it); the next client() opens a new one. */
    public function disconnect(): void
    {
        if ($this->client !== null && $this->pid === getmypid()) {
            try {
                $this->client->close();
            } catch (\RedisException) {
                // Already gone: nothing to close.
            }
        }
        $this->client = null;
    }

    /**
     * @param list<mixed> $arguments
     */
    public function __call(string $method, array $arguments): mixed
    {
        return $this->client()->{$method}(...$arguments);
    }

    /** @return array<string, mixed> what var_dump() and print_r() show: no password */
    public function __debugInfo(): array
    {
        return ['host' => $this->config['host'], 'port' => $this->config['port'], 'db' => $this->config['db']];
    }

    private function open(): \Redis
    {
        $redis = new \Redis();
        $redis->connect($this->config['host'], $this->config['port'], $this->config['timeout']);
        $redis->setOption(\Redis::OPT_READ_TIMEOUT, $this->config['timeout']);
        if ($this->config['password'] !== null) {
            $redis->auth($this->config['password']);
        }
        if ($this->config['db'] !== 0) {
            $redis->select($this->config['db']);
        }
        // A name per pooled connection shows in CLIENT LIST: which worker, which connection of it.
        $redis->client('setname', sprintf('ota-pool-%d-%d', getmypid(), ++$this->opened));

        return $redis;
    }
}
