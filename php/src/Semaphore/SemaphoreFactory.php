<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony\Semaphore;

use Deadbolt\Semaphore\Key as DeadboltKey;
use Deadbolt\Semaphore\SemaphoreFactory as DeadboltSemaphoreFactory;
use Psr\Log\LoggerInterface;
use Symfony\Component\Semaphore\Key;
use Symfony\Component\Semaphore\SemaphoreFactory as SymfonySemaphoreFactory;
use Symfony\Component\Semaphore\SemaphoreInterface;

/**
 * symfony/semaphore's SemaphoreFactory whose semaphores are Deadbolt's ({@see NativeSemaphore}): where code takes a
 * Symfony SemaphoreFactory (or SemaphoreInterface), this one line switches it to Deadbolt's engine, on the same data
 * as symfony/semaphore's RedisStore when the store is a RedisStore:
 *
 * ```php
 * $factory = new \Deadbolt\Bridge\Symfony\Semaphore\SemaphoreFactory(new \Deadbolt\Store\RedisStore($dsn));
 * $exports = $factory->createSemaphore('exports', 4); // a Symfony SemaphoreInterface
 * ```
 *
 * Beyond Symfony's arguments, createSemaphore() takes Deadbolt's $autoRefresh and $maxHold.
 */
class SemaphoreFactory extends SymfonySemaphoreFactory
{
    private readonly DeadboltSemaphoreFactory $deadbolt;

    /**
     * @param object $store a Deadbolt\Store\RedisStore, FlockStore or InMemoryStore (Symfony's factory, whose
     *                      constructor takes a Symfony store, is not called: every method it has is overridden here)
     */
    public function __construct(object $store)
    {
        $this->deadbolt = Exceptions::symfony(null, fn (): DeadboltSemaphoreFactory => new DeadboltSemaphoreFactory($store));
    }

    public function createSemaphore(string $resource, int $limit, int $weight = 1, ?float $ttlInSecond = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): SemaphoreInterface
    {
        return $this->createSemaphoreFromKey(new Key($resource, $limit, $weight), $ttlInSecond, $autoRelease, $autoRefresh, $maxHold);
    }

    public function createSemaphoreFromKey(Key $key, ?float $ttlInSecond = 300.0, bool $autoRelease = true, bool $autoRefresh = false, ?float $maxHold = null): SemaphoreInterface
    {
        return Exceptions::symfony($key, fn (): NativeSemaphore => new NativeSemaphore(
            $this->deadbolt->createSemaphoreFromKey(
                new DeadboltKey((string) $key, $key->getLimit(), $key->getWeight()),
                $ttlInSecond,
                $autoRelease,
                $autoRefresh,
                $maxHold
            ),
            $key
        ));
    }

    /** Deadbolt's semaphores log through it, with symfony/semaphore's messages. */
    public function setLogger(LoggerInterface $logger): void
    {
        $this->logger = $logger;
        $this->deadbolt->setLogger($logger);
    }
}
