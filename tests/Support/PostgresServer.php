<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private PostgreSQL (scripts/postgres-start.sh): free loopback port, its own cluster under the system's temporary
 * directory, trust authentication for the postgres user; ScriptedServer says how it starts, stops and restarts.
 */
final class PostgresServer
{
    use ScriptedServer;

    private static function scripts(): string
    {
        return 'postgres';
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
}
