<?php

declare(strict_types=1);

namespace support;

/**
 * Stand-in for webman's `support\Redis` (illuminate/redis behind a facade): `Redis::connection()->client()` is the
 * phpredis `\Redis` of the connection the pool hands out NOW.
 *
 * The pool may hand out another connection later (next request, after a reconnect, after recycle() here), and a
 * forked worker gets its own connection: ask for the client each time you need it, never keep it in a property or
 * a static across requests.
 *
 * Configuration, from the environment unless configure() overrides it:
 *   OTA_REDIS_HOST      default 127.0.0.1
 *   OTA_REDIS_PORT      default 6379
 *   OTA_REDIS_DB        default 0
 *   OTA_REDIS_PASSWORD  optional; handed to AUTH only, never logged
 *   OTA_REDIS_TIMEOUT   connect and read timeout in seconds, default 2
 *
 * Calls on the facade go to the current client, as in webman: `Redis::hGet($key, $field)`.
 *
 * @method static mixed hGet(string $key, string $field)
 * @method static mixed hSet(string $key, string $field, string $value)
 */
final class Redis
{
    /** @var array<string, RedisConnection> */
    private static array $connections = [];

    /** @var array<string, mixed>|null */
    private static ?array $config = null;

    private function __construct()
    {
    }

    /**
     * The pooled connection `$name` (only `default` is configured). Cheap: opens nothing until client() is called.
     */
    public static function connection(string $name = 'default'): RedisConnection
    {
        if ($name !== 'default') {
            throw new \InvalidArgumentException(sprintf('Redis connection "%s" is not configured.', $name));
        }

        return self::$connections[$name] ??= new RedisConnection(self::config());
    }

    /**
     * Overrides the environment (tests, the demo); null goes back to the environment. Drops the current connections.
     *
     * @param array{host?: string, port?: int, db?: int, password?: ?string, timeout?: float}|null $config
     */
    public static function configure(?array $config): void
    {
        self::recycle();
        self::$config = $config;
        self::$connections = [];
    }

    /**
     * The end of a "request": the pool takes its connections back. The next client() is another \Redis on another
     * socket, as when webman's pool hands a different connection to the next request.
     */
    public static function recycle(): void
    {
        foreach (self::$connections as $connection) {
            $connection->disconnect();
        }
    }

    /**
     * @param list<mixed> $arguments
     */
    public static function __callStatic(string $method, array $arguments): mixed
    {
        return self::connection()->client()->{$method}(...$arguments);
    }

    /**
     * @return array{host: string, port: int, db: int, password: ?string, timeout: float}
     */
    private static function config(): array
    {
        $env = static function (string $name): ?string {
            $value = getenv($name);

            return $value === false || $value === '' ? null : $value;
        };
        $config = self::$config ?? [
            'host' => $env('OTA_REDIS_HOST'),
            'port' => $env('OTA_REDIS_PORT'),
            'db' => $env('OTA_REDIS_DB'),
            'password' => $env('OTA_REDIS_PASSWORD'),
            'timeout' => $env('OTA_REDIS_TIMEOUT'),
        ];

        return [
            'host' => (string) ($config['host'] ?? '127.0.0.1'),
            'port' => (int) ($config['port'] ?? 6379),
            'db' => (int) ($config['db'] ?? 0),
            'password' => isset($config['password']) ? (string) $config['password'] : null,
            'timeout' => (float) ($config['timeout'] ?? 2.0),
        ];
    }
}
