<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private PostgreSQL (scripts/postgres-start.sh): free loopback port, its own cluster under the system's temporary
 * directory, trust authentication for the postgres user. Stopped when this object dies in the process that started it
 * (copies in forked children never touch it); stop() and startAgain() make a server restart.
 */
final class PostgresServer
{
    private readonly int $ownerPid;

    private function __construct(public readonly int $port, private readonly string $dir)
    {
        $this->ownerPid = posix_getpid();
    }

    public static function start(): self
    {
        $dir = sys_get_temp_dir().'/deadbolt-pg-'.bin2hex(random_bytes(6));

        return new self((int) self::script('postgres-start.sh', $dir), $dir);
    }

    /**
     * PDO's DSN (symfony/lock's PostgreSqlStore takes it), as the postgres user, without TLS; plus $suffix (";k=v").
     */
    public function dsn(string $suffix = ''): string
    {
        return 'pgsql:host=127.0.0.1;port='.$this->port.';dbname=postgres;user=postgres;sslmode=disable'.$suffix;
    }

    /**
     * A \PDO of its own (a session apart from every store's).
     */
    public function pdo(): \PDO
    {
        return new \PDO($this->dsn(), null, null, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    /**
     * The advisory locks of symfony/lock's key for $resource, as "Mode:granted" per session, sorted.
     *
     * @return list<string>
     */
    public function advisoryLocks(string $resource): array
    {
        $rows = $this->pdo()->query("SELECT mode || ':' || granted FROM pg_locks WHERE locktype = 'advisory' AND classid = 0 AND objsubid = 1 AND objid = ".crc32($resource).' ORDER BY 1');

        return $rows->fetchAll(\PDO::FETCH_COLUMN);
    }

    /**
     * Stops the server at once (its sessions end as in a crash).
     */
    public function stop(): void
    {
        self::script('postgres-stop.sh', $this->dir, 'keep');
    }

    /**
     * Starts the stopped server again, on the same port, with no session.
     */
    public function startAgain(): void
    {
        self::script('postgres-start.sh', $this->dir);
    }

    public function __destruct()
    {
        if (posix_getpid() === $this->ownerPid) {
            self::script('postgres-stop.sh', $this->dir);
        }
    }

    private static function script(string $name, string $dir, string ...$args): string
    {
        $command = array_map('escapeshellarg', ['bash', \dirname(__DIR__, 2).'/scripts/'.$name, $dir, ...$args]);
        exec(implode(' ', $command).' 2>&1', $output, $status);
        if (0 !== $status) {
            throw new \RuntimeException("$name failed: ".implode("\n", \array_slice($output, -10)));
        }

        return trim(implode("\n", $output));
    }
}
