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
 * $key->getRemainingLifetime(); // <= 30.0 on a RedisStore; null on FlockStore and InMemoryStore (never expire)
 * $key->reduceLifetime(5.0);
 * $lock->getRemainingLifetime(); // <= 5.0
 * ```
 *
 * A Key carries its owner token, so a Key whose lock lives in Redis (or a fresh Key) can move to another process
 * with serialize()/unserialize() and be released or refreshed there. A Key that holds a flock lock cannot: that
 * lock belongs to this process ({@see __serialize()}).
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
     * The short one-way digest of this Key's owner token, under which inspect() and the `deadbolt` command show
     * its locks (Holder::isOwnedBy()); null before the Key was ever used to lock.
     */
    public function getTokenDigest(): ?string
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
     * Makes the key expire in $ttl seconds at the latest (an earlier expiry is kept); 0 or less expires it at once,
     * as in symfony/lock.
     *
     * @param float $ttl seconds
     *
     * @throws Exception\InvalidTtlException when $ttl is NaN or INF
     */
    public function reduceLifetime(float $ttl): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether state is kept under $stateKey (symfony/lock's Key state: a store keeps its own data in the Key under its
     * class name).
     */
    public function hasState(string $stateKey): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Keeps $state under $stateKey, replacing what was there. serialize() carries it along (it must be serializable).
     */
    public function setState(string $stateKey, mixed $state): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function removeState(string $stateKey): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The state kept under $stateKey, or null when there is none (symfony/lock returns null with PHP's "Undefined array
     * key" warning; Deadbolt without the warning).
     */
    public function getState(string $stateKey): mixed
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * From now on serialize() refuses this Key with an Exception\UnserializableKeyException (a store whose lock cannot
     * leave the process marks it so).
     */
    public function markUnserializable(): void
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

    /**
     * The key as data: `['resource' => string, 'token' => string]` (serialize() calls it).
     *
     * The token identifies the owner in the store; a Key that has none yet draws it now (44 characters, base64 of 32
     * random bytes, like symfony/lock's). Moving a Redis lock to another process:
     *
     * ```php
     * // process A
     * $key = new \Deadbolt\Key('import:2024-06');
     * (new \Deadbolt\LockFactory($store))->createLockFromKey($key, 600.0, false)->acquire();
     * $queue->push(serialize($key));
     *
     * // process B, same Redis
     * $key = unserialize($queue->pop());
     * $lock = (new \Deadbolt\LockFactory($store))->createLockFromKey($key, 600.0);
     * $lock->refresh(); // still the same owner: works
     * $lock->release();
     * ```
     *
     * Giving the token to symfony/lock (>= 5.2, RedisStore):
     * `$symfonyKey->setState(\Symfony\Component\Lock\Store\RedisStore::class, $key->__serialize()['token'])`.
     * The token is a secret of the lock owner: whoever has it can release or refresh the lock. Keep serialized
     * Keys out of logs.
     *
     * @return array{resource: string, token: string, expiringTime: float|null, state: array<string, mixed>}
     *
     * @throws Exception\UnserializableKeyException when the Key holds a flock lock, which is bound to this process, or
     *                                              was marked unserializable
     */
    public function __serialize(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Restores a Key from {@see __serialize()} data (unserialize() calls it), here or in another process.
     *
     * It also imports a token from symfony/lock (>= 5.2, RedisStore), so Deadbolt can release or refresh a lock
     * that symfony/lock acquired:
     *
     * ```php
     * $token = $symfonyKey->getState(\Symfony\Component\Lock\Store\RedisStore::class);
     * $key = new \Deadbolt\Key('invoice:42');
     * $key->__unserialize(['resource' => 'invoice:42', 'token' => $token]);
     * ```
     *
     * "expiringTime" (the expiry as Unix time, as symfony/lock's Key keeps it) and "state" are optional: a Key
     * restored without them has no lifetime until a store call sets one, and no state.
     *
     * @param array{resource: string, token: string, expiringTime?: float|null, state?: array<string, mixed>} $data
     *
     * @throws Exception\InvalidArgumentException when "resource" or "token" is missing or not a string, or the token
     *                                            is empty, longer than 1024 bytes or the reserved "__write__"
     */
    public function __unserialize(array $data): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The code var_export() writes calls this: a new Key for the exported resource. var_export() shows the resource
     * only, never the token, so the rebuilt Key is a new owner of that resource (it holds nothing); carry a Key that
     * holds a lock with serialize() and unserialize().
     *
     * @param array{resource: string} $properties
     *
     * @throws \Deadbolt\Exception\InvalidArgumentException without a string "resource"
     */
    public static function __set_state(array $properties): Key
    {
    }
}
