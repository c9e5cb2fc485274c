<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A Sentinel service on loopback for one test: a primary, its replicas (REPLICAOF) and three sentinels (quorum 2)
 * that call a server down after 500 ms. start() returns once the replicas are in sync and every sentinel knows the
 * replicas and the other sentinels, so that a failover the test causes can happen.
 */
final class SentinelGroup
{
    public const SERVICE = 'deadbolt';

    /**
     * @param list<RedisServer> $servers   the first primary first
     * @param list<RedisServer> $sentinels
     */
    private function __construct(
        public readonly array $servers,
        public readonly array $sentinels,
        private readonly ?string $password,
        private readonly ?string $sentinelPassword,
    ) {
    }

    /**
     * @param string|null  $password      the servers' requirepass (and the replicas' masterauth)
     * @param list<string> $sentinelLines more config lines for each sentinel (its own requirepass...)
     */
    public static function start(int $replicas = 1, ?string $password = null, array $sentinelLines = []): self
    {
        $options = ['repl-diskless-sync-delay' => '0'];
        if (null !== $password) {
            $options += ['requirepass' => $password, 'masterauth' => $password];
        }
        $servers = [RedisServer::start($options)];
        for ($i = 0; $i < $replicas; ++$i) {
            $servers[] = RedisServer::start($options);
            $servers[$i + 1]->client($password)->rawCommand('REPLICAOF', '127.0.0.1', (string) $servers[0]->port);
        }
        $lines = null !== $password ? ['sentinel auth-pass '.self::SERVICE.' '.$password, ...$sentinelLines] : $sentinelLines;
        $sentinels = [];
        for ($i = 0; $i < 3; ++$i) {
            $sentinels[] = RedisServer::startSentinel(self::SERVICE, $servers[0]->port, 2, $lines);
        }
        $group = new self($servers, $sentinels, $password, self::requirePass($sentinelLines));
        self::waitFor('the replicas to sync and every sentinel to see them all', function () use ($group, $replicas): bool {
            foreach (\array_slice($group->servers, 1) as $replica) {
                if (!str_contains((string) $replica->client($group->password)->rawCommand('INFO', 'replication'), 'master_link_status:up')) {
                    return false;
                }
            }
            foreach ($group->sentinels as $sentinel) {
                $client = $sentinel->client($group->sentinelPassword);
                if (\count($client->rawCommand('SENTINEL', 'REPLICAS', self::SERVICE)) !== $replicas
                    || \count($client->rawCommand('SENTINEL', 'SENTINELS', self::SERVICE)) !== 2) {
                    return false;
                }
            }

            return true;
        });

        return $group;
    }

    /**
     * `redis:?host[sentinel1]&host[sentinel2]&host[sentinel3]&redis_sentinel=deadbolt` plus "&$options".
     */
    public function dsn(string $options = ''): string
    {
        $hosts = array_map(fn (RedisServer $s) => 'host[127.0.0.1:'.$s->port.']', $this->sentinels);

        return 'redis:?'.implode('&', $hosts).'&redis_sentinel='.self::SERVICE.('' !== $options ? '&'.$options : '');
    }

    /**
     * The server the first sentinel names as primary now.
     */
    public function primary(): RedisServer
    {
        $named = $this->sentinels[0]->client($this->sentinelPassword)->rawCommand('SENTINEL', 'get-master-addr-by-name', self::SERVICE);
        foreach ($this->servers as $server) {
            if ($server->port === (int) $named[1]) {
                return $server;
            }
        }
        throw new \RuntimeException('the sentinels name a server of no one: '.json_encode($named));
    }

    /**
     * Waits until every sentinel names a primary other than $old, and that server says it is one; returns it.
     */
    public function waitForFailoverFrom(RedisServer $old): RedisServer
    {
        $new = null;
        self::waitFor("a failover away from port {$old->port}", function () use ($old, &$new): bool {
            $ports = [];
            foreach ($this->sentinels as $sentinel) {
                $ports[] = (int) $sentinel->client($this->sentinelPassword)->rawCommand('SENTINEL', 'get-master-addr-by-name', self::SERVICE)[1];
            }
            if (1 !== \count(array_unique($ports)) || $ports[0] === $old->port) {
                return false;
            }
            $new = $this->primary();

            return 'master' === $new->client($this->password)->rawCommand('ROLE')[0];
        });

        return $new;
    }

    /**
     * Waits until $server (an old primary, back or still running) has been turned into a replica of the new one.
     */
    public function waitUntilReplica(RedisServer $server): void
    {
        self::waitFor("port {$server->port} to become a replica", fn (): bool => \in_array($server->client($this->password)->rawCommand('ROLE')[0], ['slave', 'replica'], true));
    }

    /**
     * Waits until every sentinel names one primary that says it is one, every other server replicates it with its
     * link up, and every sentinel lists the others as replicas in good standing: the next failover can then happen.
     * Returns that primary. The primary is read from the sentinels each time, not assumed: on a loaded machine they
     * may fail over once more. A server that follows another is pointed at it (what the sentinels would do within
     * ~10 s).
     */
    public function waitUntilSettled(): RedisServer
    {
        $why = '';
        $settled = null;
        self::waitFor('the servers and sentinels to settle', function () use (&$why, &$settled): bool {
            $ports = [];
            foreach ($this->sentinels as $sentinel) {
                $ports[] = (int) $sentinel->client($this->sentinelPassword)->rawCommand('SENTINEL', 'get-master-addr-by-name', self::SERVICE)[1];
            }
            if (1 !== \count(array_unique($ports))) {
                $why = 'the sentinels name '.implode(', ', $ports);

                return false;
            }
            $primary = $this->primary();
            if ('master' !== $primary->client($this->password)->rawCommand('ROLE')[0]) {
                $why = "port {$primary->port} is named but is no primary";

                return false;
            }
            $others = array_values(array_filter($this->servers, fn (RedisServer $s) => $s !== $primary));
            foreach ($others as $server) {
                $client = $server->client($this->password);
                $info = (string) $client->rawCommand('INFO', 'replication');
                if (!str_contains($info, "master_port:{$primary->port}\r")) {
                    $client->rawCommand('REPLICAOF', '127.0.0.1', (string) $primary->port);
                }
                if (!str_contains($info, "master_port:{$primary->port}\r") || !str_contains($info, 'master_link_status:up')) {
                    $why = "port {$server->port}: ".str_replace("\r\n", ' ', $info);

                    return false;
                }
            }
            foreach ($this->sentinels as $sentinel) {
                $good = [];
                foreach ($sentinel->client($this->sentinelPassword)->rawCommand('SENTINEL', 'REPLICAS', self::SERVICE) as $replica) {
                    $fields = [];
                    for ($i = 0; $i + 1 < \count($replica); $i += 2) {
                        $fields[$replica[$i]] = $replica[$i + 1];
                    }
                    if (\in_array($fields['flags'], ['slave', 'replica'], true) && 'ok' === $fields['master-link-status']) {
                        $good[] = (int) $fields['port'];
                    }
                }
                if (\count($good) !== \count($others)) {
                    $why = "sentinel {$sentinel->port} sees replicas in good standing: ".json_encode($good);

                    return false;
                }
            }
            $settled = $primary;

            return true;
        }, function () use (&$why): string {
            return $why;
        });

        return $settled;
    }

    public function stop(): void
    {
        foreach ([...$this->sentinels, ...$this->servers] as $server) {
            $server->stop();
        }
    }

    /**
     * @param list<string> $lines
     */
    private static function requirePass(array $lines): ?string
    {
        foreach ($lines as $line) {
            if (str_starts_with($line, 'requirepass ')) {
                return substr($line, \strlen('requirepass '));
            }
        }

        return null;
    }

    /**
     * @param \Closure(): bool        $done
     * @param (\Closure(): string)|null $why what was last seen, for the message
     */
    private static function waitFor(string $what, \Closure $done, ?\Closure $why = null): void
    {
        $deadline = microtime(true) + 60;
        $failed = '';
        while (true) {
            try {
                if ($done()) {
                    return;
                }
            } catch (\RedisException $e) {
                // A server being restarted or failed over: ask again.
                $failed = $e->getMessage();
            }
            if (microtime(true) > $deadline) {
                throw new \RuntimeException("gave up waiting for $what".(null !== $why ? ': '.$why() : '').('' !== $failed ? " (last error: $failed)" : ''));
            }
            usleep(50_000);
        }
    }
}
