<?php

namespace Deadbolt;

/**
 * One holder of a resource, as a store tells an operator (LockState::getHolders()). Made by Deadbolt only. A token
 * is never shown, only its digest: isOwnedBy() tells whether a Key of yours is this holder.
 */
final class Holder
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
     * When it took the lock (Unix seconds), where the store records it (Redis, in-memory; not flock).
     */
    public function getAcquiredAt(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * When the store lets the lock expire (Unix seconds), for stores whose locks expire (Redis).
     */
    public function getExpiresAt(): ?float
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether $key is this holder (its token's digest matches).
     */
    public function isOwnedBy(Key $key): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return array{mode: string, tokenDigest: ?string, host: ?string, pid: ?int, label: ?string, acquiredAt: ?float, expiresAt: ?float}
     */
    public function toArray(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
