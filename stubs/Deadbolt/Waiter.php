<?php

namespace Deadbolt;

/**
 * One caller waiting for a resource (LockState::getWaiters()): in the Redis store's queue, or blocked in flock(2)
 * without a timeout. Made by Deadbolt only.
 */
final class Waiter
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * "write" (exclusive) or "read" (shared).
     */
    public function getMode(): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * A short one-way digest of the token (Key::getTokenDigest()), or null where the store shows none (flock: the
     * kernel knows processes, not tokens).
     */
    public function getTokenDigest(): ?string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The host name, or null when no record was left (symfony/lock, an older Deadbolt).
     */
    public function getHost(): ?string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getPid(): ?int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The caller label: Lock::setLabel(), else DEADBOLT_LABEL or systemd's INVOCATION_ID in the environment.
     */
    public function getLabel(): ?string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Since when it waits (Unix seconds), where the store records it (Redis).
     */
    public function getWaitingSince(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key is this waiter.
     */
    public function isOwnedBy(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return array{mode: string, tokenDigest: ?string, host: ?string, pid: ?int, label: ?string, waitingSince: ?float}
     */
    public function toArray(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
