<?php

declare(strict_types=1);

namespace Deadbolt\Store;

/**
 * Builds a store from a connection string, as found in configuration.
 *
 * ```php
 * $store = \Deadbolt\Store\StoreFactory::createStore($_ENV['LOCK_DSN']); // e.g. "redis://cache:6379/2"
 * $factory = new \Deadbolt\LockFactory($store);
 * ```
 *
 * Like symfony/lock's StoreFactory::createStore(), it also takes a Redis client object.
 */
final class StoreFactory
{
    /**
     * The constructor that ext-php-rs generates for every class of the extension.
     *
     * StoreFactory only has a static factory method, {@see createStore()}; an instance of it is useless. The
     * generated constructor does not even build one: it throws.
     *
     * @throws \Exception always ("You cannot instantiate this class from PHP.")
     */
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @param string|\Redis|\RedisCluster|\Predis\ClientInterface $connection "flock" (system temp dir),
     *                                                             "flock:///absolute/path", "in-memory",
     *                                                             "semaphore" (System V; "semaphore?hash=md5" for
     *                                                             symfony/lock 5.4's IPC keys), a Redis DSN
     *                                                             ("redis://...", "rediss://...", "redis:///x.sock",
     *                                                             see {@see RedisStore}) or a Redis client object
     *
     * @return object a {@see FlockStore}, an {@see InMemoryStore}, a {@see SemaphoreStore} or a {@see RedisStore}
     *                (initial TTL 300 s)
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for any other connection string, or a malformed Redis DSN;
     *                                                      the message names the unsupported scheme or the bad
     *                                                      option and never repeats credentials
     * @throws \TypeError                                   for an object that is not a supported Redis client, or
     *                                                      another type
     */
    public static function createStore(#[\SensitiveParameter] mixed $connection): object
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
