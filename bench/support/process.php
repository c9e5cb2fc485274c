<?php

/*
 * What this php process uses and where it may run: resident memory, heap, CPU time, allowed CPUs (/proc, getrusage).
 */

declare(strict_types=1);

/** Resident set size of this process in KiB, from /proc (null where there is no /proc). */
function vmRssKib(): ?int
{
    $status = @file_get_contents('/proc/self/status');
    if ($status !== false && preg_match('/^VmRSS:\s+(\d+)\s+kB/m', $status, $m) === 1) {
        return (int) $m[1];
    }

    return null;
}

/**
 * memory_get_usage() (PHP's heap) and VmRSS (the whole process, Rust allocations included), after collecting cycles.
 *
 * @return array{int, ?int} bytes, KiB
 */
function memorySnapshot(): array
{
    gc_collect_cycles();

    return [memory_get_usage(), vmRssKib()];
}

/** CPU time (user + system) this process has used so far, in µs. */
function cpuUs(): float
{
    $u = getrusage();

    return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1e6 + $u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec'];
}

/** The CPUs a process may run on (Cpus_allowed_list in /proc), or null where that cannot be read. */
function cpusAllowed(string $pid): ?string
{
    $status = @file_get_contents("/proc/$pid/status");

    return $status !== false && preg_match('/^Cpus_allowed_list:\s*(\S+)/m', $status, $m) === 1 ? $m[1] : null;
}
