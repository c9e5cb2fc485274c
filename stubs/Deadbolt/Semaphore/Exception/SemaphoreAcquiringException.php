<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * symfony/semaphore's exception for a semaphore that could not be acquired (a full semaphore makes acquire() return false instead).
 */
class SemaphoreAcquiringException extends \RuntimeException implements ExceptionInterface
{
}
