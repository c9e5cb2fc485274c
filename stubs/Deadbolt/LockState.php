<?php

namespace Deadbolt;

/**
 * Who holds a resource and who waits for it, as the store saw them at one moment: `$store->inspect($resource)`,
 * `$lock->inspect()`, and `deadbolt status` on the command line (same fields). Made by Deadbolt only.
 *
 * ```php
 * foreach ($store->inspect('myapp:prod:daily-report')->getHolders() as $holder) {
 *     printf("%s lock held by pid %d on %s (%s) since %s\n", $holder->getMode(), $holder->getPid(),
 *         $holder->getHost(), $holder->getLabel() ?? '-', date('c', (int) $holder->getAcquiredAt()));
 * }
 * ```
 */
final class LockState
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    public function getResource(): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Whether anyone holds the resource.
     */
    public function isHeld(): bool
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return list<Holder> one writer, or the readers
     */
    public function getHolders(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return list<Waiter> in queue order
     */
    public function getWaiters(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return array{resource: string, held: bool, holders: list<array>, waiters: list<array>}
     */
    public function toArray(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
