<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown for an invalid argument value: a lock directory that cannot be used, an unsupported connection string,
 * a refresh() with no TTL anywhere.
 */
class InvalidArgumentException extends \InvalidArgumentException implements ExceptionInterface
{
}
