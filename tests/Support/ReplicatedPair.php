<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A real primary with a real replica (REPLICAOF), started and synchronised: a write of the primary's own is
 * acknowledged by the replica (WAIT) before start() returns, so a test never meets a slow first acknowledgement.
 */
final class ReplicatedPair
{
    private function __construct(public readonly RedisServer $primary, public readonly RedisServer $replica)
    {
    }

    public static function start(): self
    {
        // No 5 s pause before the first full sync (diskless replication waits for more replicas by default).
        $pair = new self(RedisServer::start(['repl-diskless-sync-delay' => '0']), RedisServer::start());
        $replica = $pair->replica->client();
        $replica->rawCommand('REPLICAOF', '127.0.0.1', (string) $pair->primary->port);
        $deadline = microtime(true) + 20;
        while (!str_contains((string) $replica->rawCommand('INFO', 'replication'), 'master_link_status:up')) {
            if (microtime(true) > $deadline) {
                $pair->stop();
                throw new \RuntimeException('the replica never connected to its primary');
            }
            usleep(20_000);
        }
        $primary = $pair->primary->client();
        $primary->set('warm', '1');
        if (1 !== $primary->rawCommand('WAIT', '1', '20000')) {
            $pair->stop();
            throw new \RuntimeException('the replica never acknowledged a write');
        }

        return $pair;
    }

    public function stop(): void
    {
        $this->replica->stop();
        $this->primary->stop();
    }
}
