<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown for a TTL that is zero, negative, NaN or INF (TTLs are seconds, strictly positive and finite).
 *
 * Unlike symfony/lock, Deadbolt rejects 0 instead of treating it as "no TTL": pass null for a lock that never expires.
 */
class InvalidTtlException extends InvalidArgumentException
{
}
