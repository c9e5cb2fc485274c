<?php

/*
 * How a scenario prints: table rows and rules, exceptions in one line, memory lines and notes.
 */

declare(strict_types=1);

/**
 * One table row: the first cell left-aligned, the others right-aligned. Widths count characters, not bytes (µ is two
 * bytes in UTF-8).
 */
function row(array $widths, string ...$cells): void
{
    $out = [];
    foreach ($cells as $i => $cell) {
        $pad = str_repeat(' ', max(0, $widths[$i] - preg_match_all('/[^\x80-\xBF]/', $cell)));
        $out[] = $i === 0 ? $cell . $pad : $pad . $cell;
    }
    echo rtrim(implode('  ', $out)), "\n";
}

/** The dashes under a table's header. */
function rule(array $widths): void
{
    row($widths, ...array_map(static fn (int $w): string => str_repeat('-', $w), $widths));
}

/** The class and first message line of an exception and of each previous one. */
function describe(Throwable $e): string
{
    $parts = [];
    for (; $e !== null; $e = $e->getPrevious()) {
        $message = strtok($e->getMessage(), "\n");
        $parts[] = get_class($e) . ': ' . ($message === false ? '' : $message);
    }

    return implode(' <- caused by ', $parts);
}

/** "123 KiB", or "n/a" where VmRSS could not be read. */
function kib(?int $value): string
{
    return $value === null ? 'n/a' : sprintf('%d KiB', $value);
}

/**
 * The memory of one variant before its first cycle and after its last (memorySnapshot() pairs), other variants
 * having run in between: a sanity check only (bench/memory.php is the growth test).
 */
function printMemory(string $title, array $before, string $afterLabel, array $after, int $cycles): void
{
    printf("\n%s (other variants ran in between):\n", $title);
    printf("  before its first cycle: memory_get_usage %d B, VmRSS %s\n", $before[0], kib($before[1]));
    printf("  %s memory_get_usage %d B, VmRSS %s\n", $afterLabel, $after[0], kib($after[1]));
    printf("  cycles run: %d\n", $cycles);
}

/** Each note after a blank line, "NOTE: " first; wrapped at $wrap columns when given. */
function printNotes(array $notes, ?int $wrap = null): void
{
    foreach ($notes as $note) {
        echo "\nNOTE: ", $wrap === null ? $note : wordwrap($note, $wrap, "\n      "), "\n";
    }
}

/**
 * The table of a one-process cycle benchmark (CycleRounds): per variant its median µs per cycle, the spread of its
 * rounds, and ratios to two anchors (no floor: '-'); then what went wrong is added to $notes (a variant that threw,
 * failed acquires).
 *
 * @param list<string> $names  the variants, in the order to show
 * @param list<string> $notes
 */
function printCycleTable(CycleRounds $bench, array $names, string $symfony, ?string $floor, string $floorHeading, array &$notes): void
{
    $medians = $bench->medians();
    $symfonyUs = $medians[$symfony] ?? null;
    $floorUs = null === $floor ? null : $medians[$floor] ?? null;
    $widths = [28, 9, 13, 15, 9];
    row($widths, 'variant', 'µs/cycle', 'min..max', 'vs symfony/lock', $floorHeading);
    rule($widths);
    foreach ($names as $name) {
        if (!isset($medians[$name])) {
            row($widths, $name, 'failed', '-', '-', '-');
            continue;
        }
        row(
            $widths,
            $name,
            sprintf('%.2f', $medians[$name]),
            sprintf('%.2f..%.2f', min($bench->wallUs[$name]), max($bench->wallUs[$name])),
            $symfonyUs === null ? '-' : sprintf('%.2fx', $medians[$name] / $symfonyUs),
            $floorUs === null ? '-' : sprintf('%.2fx', $medians[$name] / $floorUs),
        );
    }
    foreach ($bench->broken as $name => $error) {
        $notes[] = "$name threw, its row is empty: $error";
    }
    foreach ($bench->failures as $name => $count) {
        if ($count > 0) {
            $notes[] = sprintf('%s: %d acquires failed (another process using the same locks?): its time is not a'
                . ' clean cycle time.', $name, $count);
        }
    }
}
