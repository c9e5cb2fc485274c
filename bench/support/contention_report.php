<?php

/*
 * The tables, raw records and notes of bench/contention.php. $results is procs => variant name => run
 * (runContention()) plus 'stats' (analyseContention()), the variants in one order for every P.
 */

declare(strict_types=1);

require_once __DIR__ . '/csv.php';
require_once __DIR__ . '/report.php';

/** ns as ms, or "-". */
function ms(?float $ns, int $decimals = 2): string
{
    return $ns === null ? '-' : sprintf("%.{$decimals}f", $ns / 1e6);
}

/** Per P: sections, counter check, throughput, wait, hand-off and how often the lock changed hands. */
function printContentionRuns(array $results): void
{
    $widths = [20, 11, 7, 10, 8, 8, 9, 9, 9, 9, 8];
    foreach ($results as $procs => $runs) {
        echo "P=$procs\n";
        row($widths, 'variant', 'sections', 'count', 'sect/s', 'wait ms', 'p99', 'max', 'hand-off', 'p99', 'n',
            'switch');
        row($widths, '', '', '', '', 'median', '', '', 'median', '', '', '');
        rule($widths);
        foreach ($runs as $name => $run) {
            $s = $run['stats'];
            row(
                $widths,
                $name,
                $run['capped'] === null ? (string) $s['n'] : sprintf('%d/%d', $s['n'], $run['planned']),
                $s['ok'] ? 'OK' : 'FAIL',
                $s['throughput'] === null ? '-' : sprintf('%.0f', $s['throughput']),
                ms($s['wait'][0] ?? null, 3),
                ms($s['wait'][1] ?? null),
                ms($s['wait'][2] ?? null),
                ms($s['handoff'][0] ?? null, 3),
                ms($s['handoff'][1] ?? null),
                (string) count($s['handoffs']),
                $s['n'] > 1 ? sprintf('%.0f%%', 100 * $s['switches'] / ($s['n'] - 1)) : '-',
            );
        }
        echo "\n";
    }
}

/**
 * Why the waits were what they were: how they woke up, how often they were overtaken, the hand-off measured from
 * the release() call, and what Redis executed.
 */
function printContentionDiagnostics(array $results): void
{
    $widths = [20, 3, 8, 6, 8, 5, 9, 5, 9, 8, 7, 6, 6, 30];
    echo "Diagnostics (see bench/README.md)\n";
    row($widths, 'variant', 'P', 'wakeups', 'polls', 'woken 2+', 'max', 'overtaken', 'max', 'from call', 'p99', 'neg',
        'trips', 'all', 'Redis commands sent, per section');
    row($widths, '', '', '', '', 'acquires', 'woken', 'p99', '', 'median ms', '', 'h-o', '/sect', '/sect', '');
    rule($widths);
    foreach ($results as $procs => $runs) {
        foreach ($runs as $name => $run) {
            $st = $run['stats'];
            $n = max(1, $st['n']);
            $calls = $run['calls'] ?? [];
            $sent = array_intersect_key($calls, array_flip(['evalsha', 'eval', 'blpop']));
            $byName = [];
            foreach ($sent as $command => $count) {
                $byName[] = sprintf('%s %.2f', strtoupper($command), $count / $n);
            }
            // Metrics sees the waits of a Redis store only: a flock wait is flock(2) itself.
            $metered = $run['metered'] && $run['redis'];
            row(
                $widths,
                $name,
                (string) $procs,
                $metered ? (string) ($run['metrics']['wakeups'] ?? '-') : '-',
                $metered ? (string) ($run['metrics']['polls'] ?? '-') : '-',
                $metered && $st['rewoken'] !== null ? (string) $st['rewoken'] : '-',
                $metered && $st['maxWakeups'] !== null ? (string) $st['maxWakeups'] : '-',
                $st['overtaken'] === null ? '-' : (string) $st['overtaken'][0],
                $st['overtaken'] === null ? '-' : (string) $st['overtaken'][1],
                ms($st['fromCall'][0] ?? null, 3),
                ms($st['fromCall'][1] ?? null),
                (string) $st['negative'],
                $run['calls'] === null ? '-' : sprintf('%.2f', array_sum($sent) / $n),
                $run['calls'] === null ? '-' : sprintf('%.1f', array_sum($calls) / $n),
                implode(', ', $byName),
            );
        }
    }
    echo "\n";
}

/**
 * The raw records of one variant, every P: procs, process, seq, requested_us (since the barrier), wait_us, hold_us,
 * release_us, handoff_us, wakeups, polls.
 */
function writeContentionCsv(string $path, array $results, string $name): void
{
    $rows = static function () use ($results, $name): Generator {
        foreach ($results as $procs => $runs) {
            $run = $runs[$name];
            foreach ($run['stats']['sorted'] ?? [] as $k => $r) {
                $handoff = $run['stats']['handoffs'][$k] ?? null;
                yield [
                    $procs, $r['w'], $r['seq'],
                    sprintf('%.1f', ($r['req'] - $run['start']) / 1e3),
                    sprintf('%.1f', ($r['acq'] - $r['req']) / 1e3),
                    sprintf('%.1f', ($r['call'] - $r['acq']) / 1e3),
                    sprintf('%.1f', ($r['rel'] - $r['call']) / 1e3),
                    $handoff === null ? '' : sprintf('%.1f', $handoff / 1e3),
                    $r['wakeups'] ?? '',
                    $r['polls'] ?? '',
                ];
            }
        }
    };
    writeCsv($path, ['procs', 'process', 'seq', 'requested_us', 'wait_us', 'hold_us', 'release_us', 'handoff_us',
        'wakeups', 'polls'], $rows());
}

/** @return list<array{label: string, waits_ms: list<float>}> the waits of each variant of one P, for plotWaits() */
function contentionWaitSeries(array $runs): array
{
    $series = [];
    foreach ($runs as $name => $run) {
        if (($run['stats']['waits'] ?? []) !== []) {
            $series[] = ['label' => $name, 'waits_ms' => array_map(static fn (int $w): float => $w / 1e6,
                $run['stats']['waits'])];
        }
    }

    return $series;
}

/** @return list<string> failed processes, failed counter checks, negative hand-offs */
function contentionNotes(array $results): array
{
    $notes = [];
    $negative = 0;
    foreach ($results as $procs => $runs) {
        foreach ($runs as $name => $run) {
            $s = $run['stats'];
            $negative += $s['negative'];
            foreach ($run['errors'] as $error) {
                $notes[] = "$name, P=$procs: $error";
            }
            if (!$s['ok']) {
                $notes[] = sprintf('%s, P=%d: counter check FAILED: counter file says %d, %d sections recorded, %d'
                    . ' acquire(true) returned false.', $name, $procs, $run['counter'], $s['n'], $run['failed']);
            }
        }
    }
    if ($negative > 0) {
        $notes[] = "$negative hand-off(s) were negative (column `neg h-o`): the waiter's acquire returned before the"
            . ' releasing process got back from its release() call, which is possible since the wake-up and the reply'
            . ' to the release leave together; they are kept in the median and p99.';
    }

    return $notes;
}
