<?php

namespace Deadbolt;

/**
 * This process's lock metrics: counters and latency histograms, for a status page, a log line or a Prometheus
 * scrape. Per process: a forked child (a webman worker, a pcntl_fork) starts from zero.
 *
 * ```php
 * // a /metrics endpoint of a long-lived worker
 * header('Content-Type: text/plain; version=0.0.4');
 * echo \Deadbolt\Metrics::prometheus();
 * ```
 *
 * Counters: acquired, conflicts (non-blocking attempts that found the lock held), timeouts (waits that hit their
 * deadline), lost (auto-refreshed locks found gone), refresh_ok, refresh_failed, store_errors, wakeups (waits woken
 * by a release), polls (waits that woke up by themselves), released, unacknowledged (Redis locks written that too
 * few replicas acknowledged, with `replicas` on the DSN: released, and the acquire or refresh failed), force_released
 * (resources an operator released whatever their owner). Timings: wait_seconds (each acquire call) and
 * hold_seconds (from acquire to release). The same counters appear in phpinfo().
 */
final class Metrics
{
    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return array{counters: array<string, int>, timings: array<string, array{count: int, sum: float, buckets: array<string, int>}>}
     *         bucket counts are cumulative, keyed by their upper bound in seconds, the last one '+Inf'
     */
    public static function snapshot(): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The snapshot in the Prometheus text exposition format: deadbolt_<counter>_total counters and the
     * deadbolt_wait_seconds and deadbolt_hold_seconds histograms.
     */
    public static function prometheus(): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /** Starts counting from zero. */
    public static function reset(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
