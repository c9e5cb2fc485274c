<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown by Lock::acquire(), acquireRead() and refresh() when the store fails; getPrevious() is the cause.
 *
 * An acquire that finishes after the lock already expired throws it too, with a LockExpiredException as previous
 * (the lock is then removed).
 */
class LockAcquiringException extends \RuntimeException implements ExceptionInterface
{
}
