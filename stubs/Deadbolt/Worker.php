<?php

namespace Deadbolt;

/**
 * The logical end of a request in a long-running worker (FrankenPHP's worker mode, webman, RoadRunner), where PHP
 * never ends the real one. At the end of an FPM request every lock still held is released (its object dies);
 * in a worker, a Lock kept alive past its request (a service, a static, a cycle not yet collected) stays held.
 * Call this where the framework ends a request (a middleware's `finally`, after `frankenphp_handle_request()`'s
 * callback): it does what the end of an FPM request would.
 *
 * ```php
 * // webman middleware
 * public function process(Request $request, callable $handler): Response
 * {
 *     try {
 *         return $handler($request);
 *     } finally {
 *         \Deadbolt\Worker::endRequest();
 *     }
 * }
 * ```
 */
final class Worker
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * Releases every lock this PHP thread acquired since the last call (or since the real request began) that is
     * still held and was made with autoRelease (the default); locks made with `autoRelease: false` stay held, as
     * they would at the end of an FPM request. Silent, as a destructor's release: a store that fails leaves the
     * lock to its TTL.
     *
     * @return int how many locks it released
     */
    public static function endRequest(): int
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
