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
    /** What ROLE and SENTINEL REPLICAS call a replica (Redis says "slave"; a server may say "replica"). */
    private const REPLICA_ROLES = ['slave', 'replica'];

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
        self::waitFor('the replicas to sync and every sentinel to see them all', function () use ($group, $replicas): bool|string {
            foreach (\array_slice($group->servers, 1) as $replica) {
                if (!str_contains((string) $replica->client($group->password)->rawCommand('INFO', 'replication'), 'master_link_status:up')) {
                    return "port {$replica->port} is not in sync";
                }
            }
            foreach ($group->sentinels as $sentinel) {
                $client = $sentinel->client($group->sentinelPassword);
                if (\count($client->rawCommand('SENTINEL', 'REPLICAS', self::SERVICE)) !== $replicas
                    || \count($client->rawCommand('SENTINEL', 'SENTINELS', self::SERVICE)) !== 2) {
                    return "sentinel {$sentinel->port} does not see them all";
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
     * Waits until every sentinel names a primary other than $old, and that server says it is one; returns it.
     */
    public function waitForFailoverFrom(RedisServer $old): RedisServer
    {
        return self::waitFor("a failover away from port {$old->port}", fn (): RedisServer|string => $this->agreedPrimary($old));
    }

    /**
     * Waits until $server (an old primary, back or still running) has been turned into a replica of the new one.
     */
    public function waitUntilReplica(RedisServer $server): void
    {
        self::waitFor("port {$server->port} to become a replica", function () use ($server): bool|string {
            $role = $server->client($this->password)->rawCommand('ROLE')[0];

            return \in_array($role, self::REPLICA_ROLES, true) ? true : "its role is $role";
        });
    }

    /**
     * Points every server but $primary at it (REPLICAOF; a no-op for one that already follows it): what the
     * sentinels do within ~10 s after a failover, done at once so that a test need not wait for it.
     */
    public function pointReplicasAt(RedisServer $primary): void
    {
        foreach ($this->servers as $server) {
            if ($server !== $primary) {
                $server->client($this->password)->rawCommand('REPLICAOF', '127.0.0.1', (string) $primary->port);
            }
        }
    }

    /**
     * Waits until every sentinel names one primary that says it is one, every other server replicates it with its
     * link up, and every sentinel lists the others as replicas in good standing: the next failover can then happen.
     * Returns that primary. The primary is read from the sentinels each time, not assumed: on a loaded machine they
     * may fail over once more.
     */
    public function waitUntilSettled(): RedisServer
    {
        return self::waitFor('the servers and sentinels to settle', function (): RedisServer|string {
            $primary = $this->agreedPrimary();
            if (\is_string($primary)) {
                return $primary;
            }
            $this->pointReplicasAt($primary);
            foreach ($this->servers as $server) {
                if ($server === $primary) {
                    continue;
                }
                $info = (string) $server->client($this->password)->rawCommand('INFO', 'replication');
                if (!str_contains($info, "master_port:{$primary->port}\r") || !str_contains($info, 'master_link_status:up')) {
                    return "port {$server->port}: ".str_replace("\r\n", ' ', $info);
                }
            }
            foreach ($this->sentinels as $sentinel) {
                $good = [];
                foreach ($sentinel->client($this->sentinelPassword)->rawCommand('SENTINEL', 'REPLICAS', self::SERVICE) as $replica) {
                    $fields = [];
                    for ($i = 0; $i + 1 < \count($replica); $i += 2) {
                        $fields[$replica[$i]] = $replica[$i + 1];
                    }
                    if (\in_array($fields['flags'], self::REPLICA_ROLES, true) && 'ok' === $fields['master-link-status']) {
                        $good[] = (int) $fields['port'];
                    }
                }
                if (\count($good) !== \count($this->servers) - 1) {
                    return "sentinel {$sentinel->port} sees replicas in good standing: ".json_encode($good);
                }
            }

            return $primary;
        });
    }

    /**
     * The server every sentinel names as primary, if it is not $old and says it is one; else why there is none yet.
     * $old is not asked: it may be the paused primary, whose ROLE would never answer.
     */
    private function agreedPrimary(?RedisServer $old = null): RedisServer|string
    {
        $ports = array_map(
            fn (RedisServer $s): int => (int) $s->client($this->sentinelPassword)->rawCommand('SENTINEL', 'get-master-addr-by-name', self::SERVICE)[1],
            $this->sentinels,
        );
        if (1 !== \count(array_unique($ports))) {
            return 'the sentinels name ports '.implode(', ', $ports);
        }
        if ($ports[0] === $old?->port) {
            return "the sentinels still name port {$old->port}";
        }
        foreach ($this->servers as $server) {
            if ($server->port === $ports[0]) {
                return 'master' === $server->client($this->password)->rawCommand('ROLE')[0] ? $server : "port {$server->port} is named but is no primary";
            }
        }
        throw new \RuntimeException("the sentinels name port {$ports[0]}, a server of no one");
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
     * Asks $probe every 50 ms for up to 60 s: a string means "not yet, because ...", anything else is the result.
     *
     * @template T
     *
     * @param \Closure(): (T|string) $probe
     *
     * @return T
     */
    private static function waitFor(string $what, \Closure $probe): mixed
    {
        $deadline = microtime(true) + 60;
        $why = '';
        while (true) {
            try {
                $result = $probe();
                if (!\is_string($result)) {
                    return $result;
                }
                $why = $result;
            } catch (\RedisException $e) {
                // A server being restarted or failed over: ask again.
                $why = 'last error: '.$e->getMessage();
            }
            if (microtime(true) > $deadline) {
                throw new \RuntimeException("gave up waiting for $what".('' !== $why ? ": $why" : ''));
            }
            usleep(50_000);
        }
    }
}
