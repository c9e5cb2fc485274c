<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Thrown by a store when its storage fails (a lock file that cannot be opened, a connection error).
 */
class LockStorageException extends \RuntimeException implements ExceptionInterface
{
}
