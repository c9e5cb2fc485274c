<?php

/*
 * Summaries of a list of timings: median and nearest-rank percentile.
 */

declare(strict_types=1);

function median(array $values): float
{
    sort($values);
    $n = count($values);

    return $n % 2 === 1 ? $values[intdiv($n, 2)] : ($values[$n / 2 - 1] + $values[$n / 2]) / 2;
}

/** Nearest-rank percentile of a sorted list ($p in 0..1). */
function percentile(array $sorted, float $p): float
{
    return $sorted[max(0, (int) ceil($p * count($sorted)) - 1)];
}
