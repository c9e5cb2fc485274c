<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

use PHPUnit\Framework\AssertionFailedError;

/**
 * The redis-server the suite runs against: `make test` starts a private one and passes its port as
 * DEADBOLT_REDIS_PORT. Without it every Redis test fails (never skips): a green run always means Redis was tested.
 */
final class SharedRedis
{
    /** @var array<int, \Redis> inspection connections, one per process (a forked child never uses its parent's) */
    private static array $clients = [];

    public static function port(): int
    {
        $port = getenv('DEADBOLT_REDIS_PORT');
        if (false === $port || !ctype_digit($port) || (int) $port < 1 || (int) $port > 65535) {
            throw new AssertionFailedError(
                'DEADBOLT_REDIS_PORT is not set to the port of a running redis-server. Run `make test`, or start one with '
                .'`port=$(bash scripts/redis-start.sh /tmp/deadbolt-redis)` and pass DEADBOLT_REDIS_PORT=$port.'
            );
        }

        return (int) $port;
    }

    /**
     * redis://127.0.0.1:PORT followed by $suffix ("/3", "?timeout=1"...).
     */
    public static function dsn(string $suffix = ''): string
    {
        return 'redis://127.0.0.1:'.self::port().$suffix;
    }

    /**
     * The unix socket the shared server listens on, as it reports it (`CONFIG GET unixsocket`).
     */
    public static function socket(): string
    {
        $path = self::client()->config('GET', 'unixsocket')['unixsocket'] ?? '';
        if ('' === $path || !file_exists($path)) {
            throw new AssertionFailedError(sprintf(
                'The redis-server on port %d listens on no unix socket (CONFIG GET unixsocket: "%s"); start it with scripts/redis-start.sh.',
                self::port(),
                $path
            ));
        }

        return $path;
    }

    /**
     * A phpredis connection for inspecting the server (never the one under test).
     */
    public static function client(): \Redis
    {
        $pid = posix_getpid();
        if (!isset(self::$clients[$pid])) {
            $redis = new \Redis();
            if (!@$redis->connect('127.0.0.1', self::port(), 5.0)) {
                throw new AssertionFailedError('No redis-server answers on 127.0.0.1:'.self::port().' (DEADBOLT_REDIS_PORT).');
            }
            self::$clients[$pid] = $redis;
        }

        return self::$clients[$pid];
    }

    /**
     * A new phpredis connection, as an application would lend it to a store.
     */
    public static function newPhpRedis(): \Redis
    {
        $redis = new \Redis();
        $redis->connect('127.0.0.1', self::port(), 5.0);

        return $redis;
    }

    /**
     * A new Predis client (Debian's php-predis 1.1), as an application would lend it to a store.
     *
     * @param array<string, mixed> $options Predis client options ('prefix'...)
     * @param int|null             $port    another server than the shared one
     */
    public static function newPredis(array $options = [], ?int $port = null): \Predis\Client
    {
        require_once DEADBOLT_PREDIS_AUTOLOAD;

        return new \Predis\Client(['host' => '127.0.0.1', 'port' => $port ?? self::port()], $options);
    }

    /**
     * The Redis client ids of the TCP connections that process $pid has open to the server on $serverPort
     * (optionally only those using database $db), found through /proc: the socket inodes of the process, their local
     * ports, matched against CLIENT LIST. A forked child still has the descriptors it inherited: they count.
     *
     * @return list<int> sorted
     */
    public static function clientIdsOfProcess(\Redis $inspector, int $pid, int $serverPort, ?int $db = null): array
    {
        $inodes = [];
        foreach (glob("/proc/$pid/fd/*") ?: [] as $fd) {
            $target = @readlink($fd);
            if (\is_string($target) && 1 === preg_match('/^socket:\[(\d+)\]$/', $target, $m)) {
                $inodes[$m[1]] = true;
            }
        }
        $localPorts = [];
        foreach (["/proc/$pid/net/tcp", "/proc/$pid/net/tcp6"] as $table) {
            foreach (@file($table) ?: [] as $i => $line) {
                $fields = preg_split('/\s+/', trim($line));
                if (0 === $i || \count($fields) < 10) {
                    continue;
                }
                $localPort = hexdec(substr($fields[1], strrpos($fields[1], ':') + 1));
                $remotePort = hexdec(substr($fields[2], strrpos($fields[2], ':') + 1));
                if ($remotePort === $serverPort && isset($inodes[$fields[9]])) {
                    $localPorts[(int) $localPort] = true;
                }
            }
        }
        $ids = [];
        foreach ($inspector->client('list') as $client) {
            $port = (int) substr((string) $client['addr'], strrpos((string) $client['addr'], ':') + 1);
            if (isset($localPorts[$port]) && (null === $db || (int) $client['db'] === $db)) {
                $ids[] = (int) $client['id'];
            }
        }
        sort($ids);

        return $ids;
    }
}
