<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

use Deadbolt\Semaphore\Key;

/**
 * symfony/semaphore's exception for a slot that could not be released (Deadbolt's stores report a failing release as a RuntimeException, as symfony/semaphore's Semaphore does).
 */
class SemaphoreReleasingException extends \RuntimeException implements ExceptionInterface
{
    /**
     * symfony/semaphore's constructor: the message is
     * `The semaphore "<key>" could not be released: <message>.`, the code 0, with no previous exception.
     * (The exceptions Deadbolt throws itself keep their own messages.) The Key is Deadbolt's, the one its stores are
     * handed; symfony/semaphore's own Key is refused with a TypeError.
     */
    public function __construct(Key $key, string $message)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
