<?php

namespace Deadbolt;

/**
 * Lock metrics: counters and latency histograms, for a status page, a log line or a Prometheus scrape.
 *
 * Two scopes. Metrics::PROCESS (the default): this process's numbers; a forked child (a webman worker, a
 * pcntl_fork) starts from zero. Metrics::SHARED: the totals of the metrics file named by the PHP_INI_SYSTEM setting
 * deadbolt.metrics_file, to which every process that has it set adds (all the workers of a php-fpm pool, their
 * forked children too), so that one scrape of any worker shows the pool's totals. A process that ends with
 * deadbolt.metrics_textfile set adds its totals to that node_exporter textfile (cron and systemd jobs). Scrape
 * set-ups: docs/METRICS.md.
 *
 * ```php
 * // /metrics of a php-fpm pool with deadbolt.metrics_file set: the pool's totals, whichever worker answers
 * header('Content-Type: text/plain; version=0.0.4');
 * echo \Deadbolt\Metrics::prometheus(\Deadbolt\Metrics::SHARED);
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
    /** This process's numbers. */
    public const PROCESS = 'process';

    /** The totals of the metrics file (deadbolt.metrics_file): every process's that adds to it. */
    public const SHARED = 'shared';

    public function __construct()
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * @return array{counters: array<string, int>, timings: array<string, array{count: int, sum: float, buckets: array<string, int>}>}
     *         bucket counts are cumulative, keyed by their upper bound in seconds, the last one '+Inf'
     *
     * @param string|null $scope null or Metrics::PROCESS: this process; Metrics::SHARED: the metrics file's totals
     *
     * @throws Exception\InvalidArgumentException an unknown scope; Metrics::SHARED in a process that adds to no
     *                                             metrics file (the message says why: not set, or the file could not
     *                                             be used, as the warning at the start of the request said)
     */
    public static function snapshot(?string $scope = null): array
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * The snapshot in the Prometheus text exposition format: deadbolt_<counter>_total counters and the
     * deadbolt_wait_seconds and deadbolt_hold_seconds histograms. Throws as snapshot().
     */
    public static function prometheus(?string $scope = null): string
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }

    /**
     * This process starts counting from zero. A metrics file's totals are untouched (they are the pool's), and so is
     * what this process adds to its textfile when it ends (everything it counted, reset or not).
     */
    public static function reset(): void
    {
        throw new \Error('The deadbolt extension is not loaded.');
    }
}
