<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * The semaphore's slot is gone: it expired, was released, or the background refresher found it lost.
 */
class SemaphoreExpiredException extends \RuntimeException implements ExceptionInterface
{
}
