<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private MariaDB (scripts/mariadb-start.sh): free loopback port, its own data directory under the system's
 * temporary directory, root without a password from loopback, an empty database `deadbolt`; ScriptedServer says how
 * it starts, stops and restarts.
 */
final class MariaDbServer
{
    use ScriptedServer;

    private static function scripts(): string
    {
        return 'mariadb';
    }

    /**
     * PDO's DSN of the `deadbolt` database over TCP, as root (pdo_mysql takes the user from the DSN); plus $suffix
     * (";k=v").
     */
    public function dsn(string $suffix = ''): string
    {
        return 'mysql:host=127.0.0.1;port='.$this->port.';dbname=deadbolt;user=root'.$suffix;
    }

    /**
     * A \PDO of its own (a session apart from every store's).
     */
    public function pdo(): \PDO
    {
        return new \PDO($this->dsn(), null, null, [\PDO::ATTR_ERRMODE => \PDO::ERRMODE_EXCEPTION]);
    }

    /**
     * How many sessions wait in GET_LOCK() for the lock named $name (the server shows them as "User lock").
     */
    public function waitersFor(string $name): int
    {
        $statement = $this->pdo()->prepare("SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE STATE = 'User lock' AND INFO LIKE ?");
        $statement->execute(['%'.$name.'%']);

        return (int) $statement->fetchColumn();
    }
}
