<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * symfony/semaphore's exception for a slot that could not be released (Deadbolt's stores report a failing release as a RuntimeException, as symfony/semaphore's Semaphore does).
 */
class SemaphoreReleasingException extends \RuntimeException implements ExceptionInterface
{
}
