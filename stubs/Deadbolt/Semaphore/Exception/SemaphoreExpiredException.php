<?php

declare(strict_types=1);

namespace Deadbolt\Semaphore\Exception;

use Deadbolt\Semaphore\Key;

/**
 * The semaphore's slot is gone: it expired, was released, or the background refresher found it lost.
 *
 * A store written in PHP throws it for a slot that is gone: `throw new SemaphoreExpiredException($key, 'gone')`.
 */
class SemaphoreExpiredException extends \RuntimeException implements ExceptionInterface
{
    /**
     * symfony/semaphore's constructor: the message is
     * `The semaphore "<key>" has expired: <message>.`, the code 0, with no previous exception.
     * (The exceptions Deadbolt throws itself keep their own messages.) The Key is Deadbolt's, the one its stores are
     * handed; symfony/semaphore's own Key is refused with a TypeError.
     */
    public function __construct(Key $key, string $message)
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
