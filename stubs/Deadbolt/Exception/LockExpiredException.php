<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown when a lock's TTL elapsed before an operation on it completed.
 */
class LockExpiredException extends \RuntimeException implements ExceptionInterface
{
}
