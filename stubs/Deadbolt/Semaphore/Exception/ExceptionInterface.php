<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * Marker implemented by every exception a Deadbolt semaphore throws (symfony/semaphore's ExceptionInterface).
 */
interface ExceptionInterface extends \Throwable
{
}
