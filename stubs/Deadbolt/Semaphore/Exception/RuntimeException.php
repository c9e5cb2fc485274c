<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * The store failed while acquiring, refreshing or releasing a semaphore; the store's error is the previous exception.
 */
class RuntimeException extends \RuntimeException implements ExceptionInterface
{
}
