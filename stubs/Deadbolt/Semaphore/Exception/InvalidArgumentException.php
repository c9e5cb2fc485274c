<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

/**
 * A limit, weight or TTL that cannot be (symfony/semaphore's messages for the Key's checks).
 */
class InvalidArgumentException extends \InvalidArgumentException implements ExceptionInterface
{
}
