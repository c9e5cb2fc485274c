<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore;

/**
 * A semaphore's key (symfony/semaphore's Key): the resource, how much weight may be held at once (`limit`), and this
 * key's share of it (`weight`). Neither cloneable nor serializable.
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
}
