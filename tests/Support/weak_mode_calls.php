<?php

// No declare(strict_types=1) here, on purpose: PHP coerces scalar arguments by the strictness of the file in which
// the call is written, so the calls below are made in weak mode, as in most application code.

namespace Deadbolt\Tests\Support;

/**
 * Runs $call(...$args) from this weak-mode file.
 *
 * @return mixed what the call returned
 */
function call_in_weak_mode(callable $call, mixed ...$args): mixed
{
    return $call(...$args);
}

/** A LockFactory::createLock() call written in weak mode. */
function create_lock_in_weak_mode(\Deadbolt\LockFactory $factory, mixed ...$args): \Deadbolt\Lock
{
    return $factory->createLock(...$args);
}

/** A Lock::acquire() call written in weak mode. */
function acquire_in_weak_mode(\Deadbolt\Lock $lock, mixed ...$args): bool
{
    return $lock->acquire(...$args);
}

/** A Lock::refresh() call written in weak mode. */
function refresh_in_weak_mode(\Deadbolt\Lock $lock, mixed ...$args): void
{
    $lock->refresh(...$args);
}

/** new Key() written in weak mode. */
function new_key_in_weak_mode(mixed ...$args): \Deadbolt\Key
{
    return new \Deadbolt\Key(...$args);
}

/** Key::reduceLifetime() written in weak mode. */
function reduce_lifetime_in_weak_mode(\Deadbolt\Key $key, mixed ...$args): void
{
    $key->reduceLifetime(...$args);
}

/** str_repeat() written in weak mode: PHP's own wording for a value it refuses as a string. */
function php_own_refusal_in_weak_mode(mixed $value): string
{
    try {
        str_repeat($value, 1);
    } catch (\TypeError $e) {
        return $e->getMessage();
    }

    return '';
}
