<?php

declare(strict_types=1);

namespace Deadbolt\Store;

/**
 * Builds a store from a connection string, as found in configuration.
 *
 * ```php
 * $store = \Deadbolt\Store\StoreFactory::createStore($_ENV['LOCK_DSN']); // e.g. "flock:///var/lock/app"
 * $factory = new \Deadbolt\LockFactory($store);
 * ```
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
     * @param string $connection "flock" (system temp dir), "flock:///absolute/path" or "in-memory"
     *
     * @return object a {@see FlockStore} or an {@see InMemoryStore}
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException for any other connection string; the message names the
     *                                                      unsupported scheme and never repeats credentials
     */
    public static function createStore(string $connection): object
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
