<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown by Lock::release() when the store fails to release the lock.
 */
class LockReleasingException extends \RuntimeException implements ExceptionInterface
{
}
