<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private Redis Cluster for one test class: masters (three by default) and their replicas on free loopback ports,
 * each a {@see RedisServer} in cluster mode, joined with `redis-cli --cluster create --cluster-replicas N`. The 16384
 * slots are split between the masters, so resource names land on different nodes.
 *
 * Beside starting and stopping it: which node serves a key's slot and which replicate it, moving a slot between
 * masters as `redis-cli --cluster reshard` does (IMPORTING/MIGRATING, MIGRATE, SETSLOT NODE), and waiting, always
 * with a deadline, until the nodes agree again after a failover or a move. A `requirepass` option is also the
 * replicas' masterauth and what the fixture's own clients authenticate with (never on a command line).
 */
final class RedisClusterServers
{
    private const WAIT_SECONDS = 60;
    /** What ROLE calls a replica (Redis says "slave"; a server may say "replica"). */
    private const REPLICA_ROLES = ['slave', 'replica'];

    /** @var array<int, string> slot => a key in it, for {@see replicasAcknowledge()} */
    private array $ackKeys = [];

    /**
     * @param list<RedisServer> $nodes every node, masters and replicas, in the order they were started
     */
    private function __construct(public readonly array $nodes, private readonly ?string $password, private readonly int $replicasPerMaster)
    {
    }

    /**
     * @param array<string, string>                  $options more redis-server options for every node, e.g. ['cluster-node-timeout' => '1000']
     * @param (\Closure(): array<string, string>)|null $perNode options of each node's own, asked once per node (a tls-port)
     */
    public static function start(int $masters = 3, int $replicasPerMaster = 0, array $options = [], ?\Closure $perNode = null): self
    {
        $password = $options['requirepass'] ?? null;
        $options += [
            'cluster-enabled' => 'yes',
            'cluster-config-file' => 'nodes.conf',
            'cluster-node-timeout' => '5000',
            // No 5 s pause before a replica's first full sync.
            'repl-diskless-sync-delay' => '0',
        ] + (null !== $password ? ['masterauth' => $password] : []);
        $nodes = [];
        for ($i = 0; $i < $masters * (1 + $replicasPerMaster); ++$i) {
            $nodes[] = RedisServer::start($options + (null !== $perNode ? $perNode() : []));
        }
        $cluster = new self($nodes, $password, $replicasPerMaster);
        $command = [deadbolt_redis_binary('cli'), '--cluster', 'create', ...$cluster->seeds(), '--cluster-replicas', (string) $replicasPerMaster, '--cluster-yes'];
        $env = getenv() + (null !== $password ? ['REDISCLI_AUTH' => $password, 'VALKEYCLI_AUTH' => $password] : []);
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes, null, $env);
        if (false === $process) {
            throw new \RuntimeException('proc_open(redis-cli --cluster create) failed');
        }
        $output = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        if (0 !== proc_close($process)) {
            throw new \RuntimeException('redis-cli --cluster create failed: '.substr((string) $output, -800));
        }
        $cluster->waitUntilSettled();

        return $cluster;
    }

    /**
     * @return list<string> host:port of every node
     */
    public function seeds(): array
    {
        return array_map(static fn (RedisServer $node): string => '127.0.0.1:'.$node->port, $this->nodes);
    }

    /**
     * `redis:?host[127.0.0.1:P1]&host[...]&...&redis_cluster=1`, every node a seed, then $extra as `&name=value`.
     *
     * @param array<string, string> $extra DSN options, e.g. ['replicas' => '1']
     */
    public function dsn(array $extra = []): string
    {
        $parts = array_map(static fn (string $seed): string => "host[$seed]", $this->seeds());
        foreach (array_merge(['redis_cluster' => '1'], $extra) as $name => $value) {
            $parts[] = "$name=$value";
        }

        return 'redis:?'.implode('&', $parts);
    }

    /** A new \RedisCluster client, as an application would lend it to a store. */
    public function client(): \RedisCluster
    {
        return new \RedisCluster(null, $this->seeds(), 5.0, 5.0, false, $this->password);
    }

    /** A new connection to one node, authenticated, that gives up on a reply after 2 s (a paused node). */
    public function node(RedisServer $node): \Redis
    {
        $client = $node->client($this->password);
        $client->setOption(\Redis::OPT_READ_TIMEOUT, 2.0);

        return $client;
    }

    /** The hash slot of $key (CLUSTER KEYSLOT, asked of a running node). */
    public function slotOf(string $key): int
    {
        return (int) $this->node($this->anyRunning())->rawCommand('CLUSTER', 'KEYSLOT', $key);
    }

    /** The master that serves $slot, as the running nodes agree (waits until they do). */
    public function masterOf(int $slot): RedisServer
    {
        return $this->waitFor("the nodes to agree on the master of slot $slot", fn (): RedisServer|string => $this->servingNow($slot) ?? 'no master serves it');
    }

    /**
     * @return list<RedisServer> the nodes that replicate $master (ROLE of each running node)
     */
    public function replicasOf(RedisServer $master): array
    {
        return array_values(array_filter($this->nodes, function (RedisServer $node) use ($master): bool {
            if ($node === $master || !$node->isRunning()) {
                return false;
            }
            $role = $this->node($node)->rawCommand('ROLE');

            return \in_array($role[0], self::REPLICA_ROLES, true) && $master->port === (int) $role[2];
        }));
    }

    /**
     * @return list<string> the keys matching $pattern (KEYS) on every node that runs
     */
    public function keysMatching(string $pattern): array
    {
        return array_merge(...array_map(fn (RedisServer $node): array => $this->node($node)->keys($pattern), $this->running()));
    }

    /** How many error replies starting with $code (ASK, MOVED, TRYAGAIN...) $node sent (INFO errorstats). */
    public function errorCount(RedisServer $node, string $code): int
    {
        $stat = $this->node($node)->info('errorstats')['errorstat_'.$code] ?? 'count=0';

        return (int) substr($stat, \strlen('count='));
    }

    /**
     * "$prefix-N" with the smallest N whose hash slot is $slot: a name without braces, as most resources are.
     */
    public function nameInSlot(int $slot, string $prefix): string
    {
        for ($n = 0; $n < 1_000_000; ++$n) {
            $name = "$prefix-$n";
            $crc = 0;
            foreach (unpack('C*', $name) as $byte) {
                $crc ^= $byte << 8;
                for ($bit = 0; $bit < 8; ++$bit) {
                    $crc = ($crc & 0x8000) ? (($crc << 1) ^ 0x1021) & 0xFFFF : ($crc << 1) & 0xFFFF;
                }
            }
            // CRC16/XMODEM, mod 16384: what the cluster hashes; CLUSTER KEYSLOT confirms it.
            if ($crc % 16384 === $slot && $this->slotOf($name) === $slot) {
                return $name;
            }
        }
        throw new \RuntimeException("no name \"$prefix-N\" hashes to slot $slot");
    }

    /**
     * Waits until a client of some node is blocked (BLPOP...): a waiter is parked. False if none within $bound
     * seconds; callers go on anyway.
     */
    public function untilAClientBlocks(float $bound = 10.0): bool
    {
        $clients = array_map(fn (RedisServer $node): \Redis => $this->node($node), $this->running());
        $deadline = microtime(true) + $bound;
        do {
            foreach ($clients as $client) {
                if ((int) ($client->info('clients')['blocked_clients'] ?? 0) > 0) {
                    return true;
                }
            }
            usleep(2000);
        } while (microtime(true) < $deadline);

        return false;
    }

    /**
     * Starts moving $slot from the master serving it to $to: IMPORTING on $to, then MIGRATING on the source, which
     * from then on answers ASK for the keys it no longer has. Returns the source.
     */
    public function openMigration(int $slot, RedisServer $to): RedisServer
    {
        $from = $this->masterOf($slot);
        $this->node($to)->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'IMPORTING', $this->idOf($from));
        $this->node($from)->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'MIGRATING', $this->idOf($to));

        return $from;
    }

    /** MIGRATEs every key of $slot from $from to $to (the slot's owner stays who it is). */
    public function migrateKeys(int $slot, RedisServer $from, RedisServer $to): void
    {
        $source = $this->node($from);
        $auth = null !== $this->password ? ['AUTH', $this->password] : [];
        while ([] !== ($keys = $source->rawCommand('CLUSTER', 'GETKEYSINSLOT', (string) $slot, '100'))) {
            $source->rawCommand('MIGRATE', '127.0.0.1', (string) $to->port, '', '0', '5000', ...$auth, ...['KEYS', ...$keys]);
        }
    }

    /**
     * Ends a migration opened by {@see openMigration()}: the keys left MIGRATEd, then $to named the slot's owner on
     * $to, on the source and on every other master (from then on the source answers MOVED); waits until every node
     * agrees, unless $settle is false (a forked child cannot tell which nodes run: their processes are its parent's
     * children).
     */
    public function finishMigration(int $slot, RedisServer $from, RedisServer $to, bool $settle = true): void
    {
        $this->migrateKeys($slot, $from, $to);
        $id = $this->idOf($to);
        foreach ([$to, $from, ...array_filter($this->running(), fn (RedisServer $n): bool => $n !== $to && $n !== $from)] as $node) {
            if ('master' === $this->node($node)->rawCommand('ROLE')[0]) {
                $this->node($node)->rawCommand('CLUSTER', 'SETSLOT', (string) $slot, 'NODE', $id);
            }
        }
        if ($settle) {
            $this->waitFor("every node to name port {$to->port} for slot $slot", fn (): bool|string => $this->servingNow($slot) === $to ?: 'not yet');
        }
    }

    /** Moves $slot, with its keys, to the master $to. Returns the master it came from. */
    public function moveSlot(int $slot, RedisServer $to): RedisServer
    {
        $from = $this->openMigration($slot, $to);
        $this->finishMigration($slot, $from, $to);

        return $from;
    }

    /** A master other than $master. */
    public function otherMaster(RedisServer $master): RedisServer
    {
        return $this->waitFor("a master other than port {$master->port}", function () use ($master): RedisServer|string {
            foreach ((array) $this->agreedMap() as $node) {
                if ($node !== $master) {
                    return $node;
                }
            }

            return 'the nodes disagree, or know no other master';
        });
    }

    /**
     * After $old (killed or paused) stopped serving $slot: waits until the other running nodes agree that another
     * node, which says it is a master, serves it, and the cluster is ok again. Returns the promoted node.
     */
    public function waitForFailoverFrom(RedisServer $old, int $slot): RedisServer
    {
        return $this->waitFor("a failover of slot $slot away from port {$old->port}", function () use ($old, $slot): RedisServer|string {
            $new = $this->servingNow($slot, [$old]);
            if (null === $new || $new === $old) {
                return 'the nodes still name port '.$old->port;
            }
            foreach ($this->running([$old]) as $node) {
                if (!str_contains((string) $this->node($node)->rawCommand('CLUSTER', 'INFO'), 'cluster_state:ok')) {
                    return "port {$node->port} is not ok yet";
                }
            }

            return 'master' === $this->node($new)->rawCommand('ROLE')[0] ? $new : "port {$new->port} is named, is no master yet";
        });
    }

    /**
     * Waits until every node runs and agrees: cluster_state:ok, nobody flagged failing, one slot map, each master
     * with its replicas connected and in sync. After start, a failover the test caused, or a node brought back.
     */
    public function waitUntilSettled(): void
    {
        $this->waitFor('the cluster to settle', function (): bool|string {
            $map = $this->agreedMap();
            if (\is_string($map)) {
                return $map;
            }
            foreach ($this->nodes as $node) {
                if (!$node->isRunning()) {
                    return "port {$node->port} does not run";
                }
                $client = $this->node($node);
                $info = (string) $client->rawCommand('CLUSTER', 'INFO');
                $nodes = (string) $client->rawCommand('CLUSTER', 'NODES');
                if (!str_contains($info, 'cluster_state:ok') || str_contains($nodes, 'fail') || !str_contains($info, 'cluster_known_nodes:'.\count($this->nodes)."\r")) {
                    return "port {$node->port}: ".strtr($info, "\r\n", '  ');
                }
                $role = $client->rawCommand('ROLE');
                if ('master' === $role[0] && \in_array($node, $map, true) && \count($role[2]) !== $this->replicasPerMaster) {
                    return "master {$node->port} has replicas ".json_encode($role[2]);
                }
                if (\in_array($role[0], self::REPLICA_ROLES, true) && ('connected' !== $role[3] || !\in_array((int) $role[2], array_map(fn (RedisServer $m): int => $m->port, $map), true))) {
                    return "replica {$node->port}: ".json_encode($role);
                }
            }

            return $this->replicasAcknowledge($map);
        });
    }

    /** Brings back every node a test killed (restart) or paused (resume), and waits until the cluster settles. */
    public function revive(): void
    {
        foreach ($this->nodes as $node) {
            $node->isRunning() ? $node->resume() : $node->restart();
        }
        $this->waitUntilSettled();
    }

    public function stop(): void
    {
        foreach ($this->nodes as $node) {
            $node->stop();
        }
    }

    /**
     * The slot map (slot => master) every running node but $skip gives, if they all give the same one; else why not.
     * Slots no node serves are missing.
     *
     * @param list<RedisServer> $skip nodes not to ask (a paused one would not answer)
     *
     * @return array<int, RedisServer>|string
     */
    private function agreedMap(array $skip = []): array|string
    {
        $byPort = [];
        foreach ($this->nodes as $node) {
            $byPort[$node->port] = $node;
        }
        $seen = null;
        foreach ($this->running($skip) as $node) {
            $ranges = [];
            foreach ($this->node($node)->rawCommand('CLUSTER', 'SLOTS') as $range) {
                $ranges[$range[0]] = [$range[1], (int) $range[2][1]];
            }
            ksort($ranges);
            if (null !== $seen && $seen !== $ranges) {
                return "port {$node->port} has another slot map";
            }
            $seen = $ranges;
        }
        $map = [];
        foreach ($seen ?? [] as $first => [$last, $port]) {
            $map += array_fill($first, $last - $first + 1, $byPort[$port]);
        }

        return $map;
    }

    /**
     * The master of $slot if every running node but $skip names the same one now, else null.
     *
     * @param list<RedisServer> $skip
     */
    private function servingNow(int $slot, array $skip = []): ?RedisServer
    {
        $map = $this->agreedMap($skip);

        return \is_array($map) ? $map[$slot] ?? null : null;
    }

    /**
     * Whether every master's replicas acknowledge a write (SET and DEL of a key in its first slot, then WAIT): a
     * replica that has just synced gets the master's stream only after its first acknowledgement, up to a second
     * later, and a `replicas=N` lock written before that would not count.
     *
     * @param array<int, RedisServer> $map
     */
    private function replicasAcknowledge(array $map): bool|string
    {
        if (0 === $this->replicasPerMaster) {
            return true;
        }
        foreach (array_unique(array_map(static fn (RedisServer $m): int => $m->port, $map)) as $slot => $port) {
            $key = $this->ackKeys[$slot] ??= $this->nameInSlot($slot, 'deadbolt-fixture-ack');
            $client = $this->node($map[$slot]);
            $client->set($key, '1');
            $client->del($key);
            if ((int) $client->rawCommand('WAIT', (string) $this->replicasPerMaster, '100') < $this->replicasPerMaster) {
                return "the replicas of port $port do not acknowledge yet";
            }
        }

        return true;
    }

    private function idOf(RedisServer $node): string
    {
        return (string) $this->node($node)->rawCommand('CLUSTER', 'MYID');
    }

    /**
     * @param list<RedisServer> $skip
     *
     * @return list<RedisServer>
     */
    private function running(array $skip = []): array
    {
        return array_values(array_filter($this->nodes, static fn (RedisServer $n): bool => $n->isRunning() && !\in_array($n, $skip, true)));
    }

    private function anyRunning(): RedisServer
    {
        return $this->running()[0] ?? throw new \RuntimeException('no node of the cluster runs');
    }

    /**
     * Asks $probe every 50 ms until it returns something other than a string (the reason it is not there yet), for
     * at most WAIT_SECONDS; a node that does not answer (it restarts, or is paused) only means "not yet".
     *
     * @template T
     *
     * @param \Closure(): (T|string) $probe
     *
     * @return T
     */
    private function waitFor(string $what, \Closure $probe): mixed
    {
        $deadline = microtime(true) + self::WAIT_SECONDS;
        do {
            try {
                $result = $probe();
            } catch (\RedisException $e) {
                $result = 'a node did not answer: '.$e->getMessage();
            }
            if (!\is_string($result)) {
                return $result;
            }
            usleep(50_000);
        } while (microtime(true) < $deadline);
        throw new \RuntimeException("gave up waiting for $what: $result");
    }
}
