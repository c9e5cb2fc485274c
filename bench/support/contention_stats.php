<?php

/*
 * The statistics of one run of bench/contention.php (runContention()), in ns: the counter check, throughput, waits,
 * hand-offs, how often the lock changed hands and how often a waiter was overtaken. bench/README.md defines each.
 */

declare(strict_types=1);

require_once __DIR__ . '/stats.php';

function analyseContention(array $run): array
{
    $records = $run['records'];
    $n = count($records);
    $stats = ['n' => $n, 'ok' => false, 'throughput' => null, 'wait' => null, 'handoff' => null, 'switches' => 0,
        'handoffs' => [], 'negative' => 0, 'fromCall' => null, 'overtaken' => null, 'rewoken' => null,
        'maxWakeups' => null];
    if ($n === 0) {
        return $stats;
    }
    usort($records, static fn (array $a, array $b): int => $a['seq'] <=> $b['seq']);
    // Mutual exclusion held iff the counter values read are exactly 0..n-1 and the file says n.
    $stats['ok'] = $run['counter'] === $n && array_column($records, 'seq') === range(0, $n - 1)
        && $run['errors'] === [] && $run['failed'] === 0;
    $end = max(array_column($records, 'rel'));
    $stats['throughput'] = $n / (($end - $run['start']) / 1e9);
    $waits = array_map(static fn (array $r): int => $r['acq'] - $r['req'], $records);
    sort($waits);
    $stats['waits'] = $waits;
    $stats['wait'] = [percentile($waits, 0.5), percentile($waits, 0.99), $waits[$n - 1]];
    // Hand-off: a section whose previous holder was ANOTHER process and that was already waiting when that holder's
    // release() returned; from that return to its own acquire() returning.
    $handoffs = [];
    $fromCall = [];
    for ($k = 1; $k < $n; ++$k) {
        $previous = $records[$k - 1];
        $current = $records[$k];
        if ($previous['w'] === $current['w']) {
            continue;
        }
        ++$stats['switches'];
        if ($current['req'] < $previous['rel']) {
            $handoffs[$k] = $current['acq'] - $previous['rel'];
            $fromCall[] = $current['acq'] - $previous['call'];
        }
    }
    $stats['handoffs'] = $handoffs;
    // Overtaken: how many sections began (acquire returned) while this acquire was waiting. A first-come,
    // first-served lock keeps this under P.
    $overtaken = [];
    for ($k = 0; $k < $n; ++$k) {
        $count = 0;
        for ($j = $k - 1; $j >= 0 && $records[$j]['acq'] > $records[$k]['req']; --$j) {
            ++$count;
        }
        $overtaken[] = $count;
    }
    sort($overtaken);
    $stats['overtaken'] = [percentile($overtaken, 0.99), $overtaken[$n - 1]];
    if ($records[0]['wakeups'] !== null) {
        $wakeups = array_column($records, 'wakeups');
        $stats['rewoken'] = count(array_filter($wakeups, static fn (int $x): bool => $x >= 2));
        $stats['maxWakeups'] = max($wakeups);
    }
    if ($handoffs !== []) {
        $sorted = array_values($handoffs);
        sort($sorted);
        $stats['handoff'] = [percentile($sorted, 0.5), percentile($sorted, 0.99)];
        $stats['negative'] = count(array_filter($sorted, static fn (int $h): bool => $h < 0));
        sort($fromCall);
        $stats['fromCall'] = [percentile($fromCall, 0.5), percentile($fromCall, 0.99)];
    }
    $stats['sorted'] = $records;

    return $stats;
}
