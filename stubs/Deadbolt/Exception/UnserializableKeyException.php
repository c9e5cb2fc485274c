<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown when serializing a Key whose lock is bound to this process (a flock lock), as in symfony/lock.
 *
 * Keys of Redis locks, and Keys that hold no lock, serialize.
 */
class UnserializableKeyException extends \RuntimeException implements ExceptionInterface
{
}
