<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A private Redis Cluster for one test class: three masters (no replicas) on free loopback ports, each a
 * {@see RedisServer} in cluster mode, joined with `redis-cli --cluster create`. The 16384 slots are split between
 * them, so resource names land on different nodes.
 */
final class RedisClusterServers
{
    /**
     * @param list<RedisServer> $nodes
     */
    private function __construct(public readonly array $nodes)
    {
    }

    public static function start(int $masters = 3): self
    {
        $nodes = [];
        for ($i = 0; $i < $masters; ++$i) {
            $nodes[] = RedisServer::start([
                'cluster-enabled' => 'yes',
                'cluster-config-file' => 'nodes.conf',
                'cluster-node-timeout' => '5000',
            ]);
        }
        $cluster = new self($nodes);
        $command = array_merge([deadbolt_redis_binary('cli'), '--cluster', 'create'], $cluster->seeds(), ['--cluster-replicas', '0', '--cluster-yes']);
        $process = proc_open($command, [0 => ['file', '/dev/null', 'r'], 1 => ['pipe', 'w'], 2 => ['redirect', 1]], $pipes);
        if (false === $process) {
            throw new \RuntimeException('proc_open(redis-cli --cluster create) failed');
        }
        $output = stream_get_contents($pipes[1]);
        fclose($pipes[1]);
        if (0 !== proc_close($process)) {
            throw new \RuntimeException('redis-cli --cluster create failed: '.substr((string) $output, -800));
        }
        $cluster->waitUntilReady();

        return $cluster;
    }

    /**
     * @return list<string> host:port of every node
     */
    public function seeds(): array
    {
        return array_map(static fn (RedisServer $node): string => '127.0.0.1:'.$node->port, $this->nodes);
    }

    /** A new \RedisCluster client, as an application would lend it to a store. */
    public function client(): \RedisCluster
    {
        return new \RedisCluster(null, $this->seeds(), 5.0, 5.0);
    }

    public function stop(): void
    {
        foreach ($this->nodes as $node) {
            $node->stop();
        }
    }

    /** Every node agrees that all slots are served (cluster_state:ok). */
    private function waitUntilReady(): void
    {
        $deadline = hrtime(true) + 20_000_000_000;
        foreach ($this->nodes as $node) {
            $client = $node->client();
            while (!str_contains((string) $client->rawCommand('CLUSTER', 'INFO'), 'cluster_state:ok')) {
                if (hrtime(true) > $deadline) {
                    throw new \RuntimeException('the cluster did not reach cluster_state:ok within 20 s');
                }
                usleep(50_000);
            }
            $client->close();
        }
    }
}
