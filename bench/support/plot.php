<?php

/*
 * The picture of a wait distribution (PNG), drawn by matplotlib through plot_waits.py beside this file. matplotlib is
 * not a project dependency: the interpreter (CONTENTION_PYTHON, else python3) is used only when it can import it;
 * otherwise the caller gets a note saying why there is no picture. php-gd is not used.
 */

declare(strict_types=1);

/**
 * Draws, for each series, the CDF of its waits (above) and the share of waits longer than x on a log scale (below,
 * where the tail shows), both on a log x axis.
 *
 * @param list<array{label: string, waits_ms: list<float>}> $series
 *
 * @return string|null null once $png is written, else why not (for a note)
 */
function plotWaits(string $png, string $title, array $series): ?string
{
    $python = getenv('CONTENTION_PYTHON') ?: 'python3';
    exec(escapeshellarg($python) . ' -c "import matplotlib" 2>/dev/null', $ignored, $status);
    if ($status !== 0) {
        return "No picture: $python cannot import matplotlib (set CONTENTION_PYTHON to an interpreter that can,"
            . ' e.g. a venv: python3 -m venv /tmp/mpl && /tmp/mpl/bin/pip install matplotlib).';
    }
    // Its output comes back through pipes: handing it this process's STDOUT would make PHP seek fd 1 to the start of
    // a file that the output is redirected to, and what follows would overwrite the report.
    $process = proc_open([$python, __DIR__ . '/plot_waits.py'],
        [0 => ['pipe', 'r'], 1 => ['pipe', 'w'], 2 => ['pipe', 'w']], $pipes);
    if ($process === false) {
        return "No picture: cannot run $python.";
    }
    fwrite($pipes[0], json_encode(['out' => $png, 'title' => $title, 'series' => $series]));
    fclose($pipes[0]);
    echo stream_get_contents($pipes[1]); // nothing, unless matplotlib has something to say
    fclose($pipes[1]);
    $stderr = stream_get_contents($pipes[2]);
    fclose($pipes[2]);

    return proc_close($process) === 0 ? null : 'No picture: matplotlib failed: ' . trim((string) $stderr);
}
