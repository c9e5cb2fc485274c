<?php

declare(strict_types=1);

namespace Deadbolt;

/**
 * The identity of one lock: a resource name, an owner token and an expiry.
 *
 * A Key shared with {@see LockFactory::createLockFromKey()} shows that lock's state: a store's exists($key)
 * answers whether this Key owns the lock, and its lifetime is the lock's lifetime.
 *
 * ```php
 * $key = new \Deadbolt\Key('invoice:42');
 * $lock = $factory->createLockFromKey($key, 30.0);
 * $lock->acquire();
 * $key->getRemainingLifetime(); // null: FlockStore and InMemoryStore locks never expire
 * $key->reduceLifetime(5.0);
 * $lock->getRemainingLifetime(); // <= 5.0
 * ```
 *
 * Keys cannot be serialized: serialize() throws an \Exception.
 *
 * @not-serializable
 */
final class Key
{
    /**
     * @param string $resource any bytes: empty, binary (NUL bytes) and long (1 MB) names are valid
     */
    public function __construct(string $resource)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The resource name, byte for byte.
     */
    public function __toString(): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Seconds left before the key expires; null when it has no expiry.
     */
    public function getRemainingLifetime(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether the key's expiry has passed; false when it has no expiry.
     */
    public function isExpired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Makes the key expire in $ttl seconds at the latest (an earlier expiry is kept).
     *
     * @param float $ttl seconds
     *
     * @throws Exception\InvalidTtlException when $ttl is zero, negative, NaN or INF
     */
    public function reduceLifetime(float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Removes the expiry.
     */
    public function resetLifetime(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
