<?php

declare(strict_types=1);

namespace Deadbolt\Bridge\Symfony;

/**
 * Deadbolt's exceptions as symfony/lock's: code that catches Symfony's classes (a LockConflictedException from a
 * blocking acquire, a LockReleasingException) keeps working. The classes have the same short names in both; the
 * Deadbolt exception stays reachable as the previous one.
 *
 * @internal
 */
final class Exceptions
{
    /** Symfony's counterpart of a Deadbolt exception, or the exception itself when it is not one of Deadbolt's. */
    public static function translate(\Throwable $e): \Throwable
    {
        if (!$e instanceof \Deadbolt\Exception\ExceptionInterface) {
            return $e;
        }
        $short = substr(strrchr($e::class, '\\') ?: '\\'.$e::class, 1);
        $symfony = 'Symfony\\Component\\Lock\\Exception\\'.$short;
        if (!class_exists($symfony)) {
            // InvalidTtlException and the rest are all in symfony/lock >= 5.4; a class of Deadbolt's own (none
            // today) would stay as it is.
            return $e;
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
    public static function symfony(\Closure $call): mixed
    {
        try {
            return $call();
        } catch (\Throwable $e) {
            throw self::translate($e);
        }
    }
}
