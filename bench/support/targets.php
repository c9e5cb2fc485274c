<?php

/*
 * Targets: a measured figure against the threshold someone asked for, printed one per line, met or MISSED.
 */

declare(strict_types=1);

/**
 * @param list<array{string, string, bool}> $checks the target ("p99 wait < 5 ms"), the figure as printed ("3.21 ms"),
 *   whether it was met
 */
function printTargets(string $title, array $checks): void
{
    echo $title, "\n";
    foreach ($checks as [$target, $figure, $met]) {
        printf("  %-28s%s  %s\n", "$target:", $figure, $met ? 'met' : 'MISSED');
    }
    echo "\n";
}
