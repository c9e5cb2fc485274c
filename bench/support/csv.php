<?php

/*
 * Raw records as CSV, for reading into a spreadsheet or a plotting tool after the run.
 */

declare(strict_types=1);

/** @param iterable<list<scalar|null>> $rows */
function writeCsv(string $path, array $header, iterable $rows): void
{
    $csv = fopen($path, 'w');
    if ($csv === false) {
        throw new RuntimeException("cannot write $path");
    }
    fputcsv($csv, $header);
    foreach ($rows as $row) {
        fputcsv($csv, $row);
    }
    fclose($csv);
}
