<?php

declare(strict_types=1);

namespace Deadbolt\Exception;

/**
 * Marker implemented by every exception Deadbolt throws: catch it to handle any lock failure.
 *
 * ```php
 * try {
 *     $lock->acquire(true);
 * } catch (\Deadbolt\Exception\ExceptionInterface $e) {
 *     // any Deadbolt failure
 * }
 * ```
 */
interface ExceptionInterface extends \Throwable
{
}
