<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * Three redis-servers that know nothing of each other: the masters of a quorum (combined store) test.
 */
final class IndependentMasters
{
    /** @var list<RedisServer> */
    public readonly array $servers;

    public function __construct(int $count = 3)
    {
        $servers = [];
        for ($i = 0; $i < $count; ++$i) {
            $servers[] = RedisServer::start();
        }
        $this->servers = $servers;
    }

    /** How many running masters have a lock on $resource. */
    public function holding(string $resource): int
    {
        $held = 0;
        foreach ($this->servers as $server) {
            if ($server->isRunning() && 1 === $server->client()->exists($resource)) {
                ++$held;
            }
        }

        return $held;
    }

    public function stop(): void
    {
        foreach ($this->servers as $server) {
            $server->stop();
        }
    }
}
