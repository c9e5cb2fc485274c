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

/**
 * Pins this php process (every thread) and redis-server (pid $redisPid, on this host) with taskset(1): "one" puts
 * both on CPU 0, "two" php on CPU 0 and redis-server on CPU 1 (bench/README.md, "Two speeds of loopback"). The server
 * gets back the CPUs it had when this process exits. Returns an error, or null when both are pinned.
 */
function pinProcesses(string $how, string $redisPid): ?string
{
    $serverCpu = ['one' => '0', 'two' => '1'][$how] ?? null;
    if ($serverCpu === null) {
        return "--pin takes one or two, got '$how'";
    }
    $before = cpusAllowed($redisPid);
    if ($before === null) {
        return "redis-server (pid $redisPid) is not a process of this host: cannot pin it";
    }
    $pin = static function (string $cpus, string $pid): bool {
        exec(sprintf('taskset -a -p -c %s %s 2>&1', escapeshellarg($cpus), escapeshellarg($pid)), $output, $status);

        return $status === 0;
    };
    if (!$pin($serverCpu, $redisPid) || !$pin('0', (string) getmypid())) {
        $pin($before, $redisPid);

        return "taskset could not pin php to CPU 0 and redis-server to CPU $serverCpu (is CPU $serverCpu online?)";
    }
    $owner = getmypid();
    register_shutdown_function(static function () use ($pin, $before, $redisPid, $owner): void {
        if (getmypid() === $owner) {
            $pin($before, $redisPid);
        }
    });

    return null;
}
