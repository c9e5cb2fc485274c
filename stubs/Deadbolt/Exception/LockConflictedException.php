<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown when someone else holds the lock: by a store's save methods, by Lock::refresh() when this lock is no
 * longer the owner, and by a blocking acquire that ends without the lock.
 *
 * A non-blocking Lock::acquire() does not throw it: it returns false.
 */
class LockConflictedException extends \RuntimeException implements ExceptionInterface
{
}
