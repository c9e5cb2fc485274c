<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony\Semaphore;

use Symfony\Component\Semaphore\Key;

/**
 * Deadbolt's semaphore exceptions as symfony/semaphore's (same short names): code that catches Symfony's classes
 * keeps working. Symfony's RuntimeException and InvalidArgumentException keep Deadbolt's as the previous one; its
 * Semaphore*Exception classes take the Key and a reason, and have no previous.
 *
 * @internal
 */
final class Exceptions
{
    /** Symfony's counterpart of a Deadbolt semaphore exception, or the exception itself otherwise. */
    public static function translate(\Throwable $e, ?Key $key): \Throwable
    {
        if (!$e instanceof \Deadbolt\Semaphore\Exception\ExceptionInterface) {
            return $e;
        }
        $short = substr(strrchr($e::class, '\\') ?: '\\'.$e::class, 1);
        $symfony = 'Symfony\\Component\\Semaphore\\Exception\\'.$short;
        if (!class_exists($symfony)) {
            return $e;
        }
        if (str_starts_with($short, 'Semaphore')) {
            if (null === $key) {
                return $e;
            }
            // Symfony's constructor says 'The semaphore "x" has expired: <reason>.': give it the reason only.
            $reason = preg_replace('/^The semaphore "[^"]*" has expired: /', '', rtrim($e->getMessage(), '.'));

            return new $symfony($key, (string) $reason);
        }

        return new $symfony($e->getMessage(), (int) $e->getCode(), $e);
    }

    /**
     * Runs $call and throws what it throws as Symfony's exceptions.
     *
     * @template T
     *
     * @param \Closure(): T $call
     *
     * @return T
     */
    public static function symfony(?Key $key, \Closure $call): mixed
    {
        try {
            return $call();
        } catch (\Throwable $e) {
            throw self::translate($e, $key);
        }
    }
}
