<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * A semaphore's key (symfony/semaphore's Key): the resource, how much weight may be held at once (`limit`), and this
 * key's share of it (`weight`).
 *
 * Like symfony/semaphore's plain Key, it is serializable and cloneable. serialize() carries the owner token, so a
 * Key whose slot lives in Redis can move to another process and be released, refreshed or checked there:
 *
 * ```php
 * // process A
 * $key = new \Deadbolt\Semaphore\Key('imports', 4, 2);
 * (new \Deadbolt\Semaphore\SemaphoreFactory($store))->createSemaphoreFromKey($key, 600.0, false)->acquire();
 * $queue->push(serialize($key));
 *
 * // process B, same Redis
 * $semaphore = (new \Deadbolt\Semaphore\SemaphoreFactory($store))->createSemaphoreFromKey(unserialize($queue->pop()));
 * $semaphore->release(); // the slot process A took
 * ```
 *
 * `clone` gives an independent Key with the same state: the same owner token (a Semaphore made from the copy holds
 * what the original holds), lifetime and values kept by name; changing one changes nothing in the other. A Key
 * inherited through fork(), or never used yet, gives a copy that is an owner of its own.
 */
final class Key
{
    /**
     * @throws Exception\InvalidArgumentException for a limit or weight under 1, or a weight over the limit
     */
    public function __construct(string $resource, int $limit, int $weight = 1)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function __toString(): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getLimit(): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getWeight(): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function resetLifetime(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function reduceLifetime(float $ttlInSeconds): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getRemainingLifetime(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function isExpired(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether state is kept under $stateKey (symfony/semaphore's Key state: a store keeps its own data in the Key
     * under its class name).
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
     * The state kept under $stateKey, or null when there is none (symfony/semaphore returns null with PHP's
     * "Undefined array key" warning; Deadbolt without the warning).
     */
    public function getState(string $stateKey): mixed
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The key as data (serialize() calls it): a lock Key's fields and the limit and weight. The token identifies the
     * owner in the store; a Key that has none yet draws it now (44 characters, symfony/semaphore's shape). It is a
     * secret of the owner: whoever has it can release or refresh the slot. Keep serialized Keys out of logs.
     *
     * @return array{resource: string, token: string, expiringTime: float|null, state: array<string, mixed>, limit: int, weight: int}
     *
     * @throws Exception\RuntimeException when the Key holds flock slots, which are bound to this process
     */
    public function __serialize(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Restores a Key from {@see __serialize()} data (unserialize() calls it), here or in another process.
     *
     * @param array<string, mixed> $data string `resource` and `token`, int `limit` and `weight`, optionally
     *                                   `expiringTime` (Unix time, float|null) and `state` (array)
     *
     * @throws Exception\InvalidArgumentException naming the field that is missing or wrong (the constructor's checks
     *                                            for the limit and weight; the token is never quoted)
     */
    public function __unserialize(array $data): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
