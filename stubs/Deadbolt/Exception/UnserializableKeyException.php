<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Meant for serializing a Key whose lock is bound to this process (flock), as in symfony/lock.
 *
 * Not thrown yet: for now no Key can be serialized, and serialize() throws PHP's own \Exception.
 */
class UnserializableKeyException extends \RuntimeException implements ExceptionInterface
{
}
