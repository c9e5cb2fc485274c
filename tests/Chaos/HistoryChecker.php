<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

/**
 * Judges a chaos run from its files alone: the workers' history lines, the fenced resource's log, the fault log.
 *
 * Violations (each with its evidence lines):
 *  (1) fencing: the resource accepted writes out of token order (accept order != token order), a history line and
 *      the resource log disagree, or two holds got the same token;
 *  (2) exclusion: two "running holders" overlapped, or a running holder's write was rejected as stale. A running
 *      holder is an operation that got the lock, whose worker received no SIGSTOP between the operation's start and
 *      end, and whose lock still said it was valid (!isExpired() && !isLost()) after its critical section ended
 *      (that is all a lease promises: the critical section [ta, te] lies inside the lock's own validity);
 *  (3) failures: any exception class outside Deadbolt\Exception\, a running holder without a fencing token, anything on a
 *      worker's stderr (PHP warnings, fatals), a worker that exited non-zero without being SIGKILLed.
 */
final class HistoryChecker
{
    /** @var list<string> */
    public array $violations = [];

    /** @var array<string, int|float|string> */
    public array $stats = [];

    /**
     * @param array<int, list<array{int, int}>>                           $pauses  worker => [[stop_ns, cont_ns]...]
     * @param array<int, bool>                                            $killed  worker => true (SIGKILLed)
     * @param array<int, array{exit: int|null, stderr: string}>           $exits   worker => how it ended
     */
    public function __construct(
        private readonly string $dir,
        private readonly array $pauses,
        private readonly array $killed,
        private readonly array $exits,
    ) {
    }

    public function check(): void
    {
        $records = [];
        foreach (glob($this->dir.'/history-*.jsonl') ?: [] as $file) {
            foreach (file($file, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $n => $line) {
                try {
                    $records[] = json_decode($line, true, 16, JSON_THROW_ON_ERROR);
                } catch (\JsonException $e) {
                    $this->violation('(3) unreadable history line', [basename($file).':'.($n + 1).' '.$line]);
                }
            }
        }
        $byKey = [];
        foreach ($records as $r) {
            $byKey[$r['w'].'/'.$r['op']] = $r;
        }
        $log = $this->readResourceLog('resource.log');
        $rejectedLog = $this->readResourceLog('resource.rejected');

        $this->checkFencing($records, $byKey, $log);
        $this->checkExclusion($records);
        $this->checkFailures($records);

        $outcomes = array_count_values(array_map(static fn (array $r): string => $r['out'], $records));
        ksort($outcomes);
        $this->stats['operations'] = \count($records);
        foreach ($outcomes as $out => $count) {
            $this->stats['outcome '.$out] = $count;
        }
        $this->stats['accepted writes (resource log)'] = \count($log);
        $this->stats['stale writes rejected (resource)'] = \count($rejectedLog);
        $exceptions = [];
        foreach ($records as $r) {
            foreach (['exc' => $r['phase'] ?? '?', 'rexc' => 'release'] as $field => $phase) {
                if (isset($r[$field])) {
                    $name = $r[$field].' @'.$phase;
                    $exceptions[$name] = ($exceptions[$name] ?? 0) + 1;
                }
            }
        }
        ksort($exceptions);
        foreach ($exceptions as $name => $count) {
            $this->stats['exception '.$name] = $count;
        }
        $this->stats['violations'] = \count($this->violations);
    }

    /**
     * @return list<array{token: int, w: int, op: int, at: int, line: string}>
     */
    private function readResourceLog(string $name): array
    {
        $entries = [];
        foreach (@file($this->dir.'/'.$name, FILE_IGNORE_NEW_LINES | FILE_SKIP_EMPTY_LINES) ?: [] as $line) {
            $f = explode(' ', $line);
            $entries[] = ['token' => (int) $f[0], 'w' => (int) $f[1], 'op' => (int) $f[2], 'at' => (int) $f[3], 'line' => $line];
        }

        return $entries;
    }

    /**
     * @param list<array<string, mixed>>                                  $records
     * @param array<string, array<string, mixed>>                         $byKey
     * @param list<array{token: int, w: int, op: int, at: int, line: string}> $log
     */
    private function checkFencing(array $records, array $byKey, array $log): void
    {
        // Accept order (the time each write was accepted, taken under the resource's flock) == token order.
        $sorted = $log;
        usort($sorted, static fn (array $a, array $b): int => $a['at'] <=> $b['at']);
        for ($i = 1, $n = \count($sorted); $i < $n; ++$i) {
            if ($sorted[$i]['token'] <= $sorted[$i - 1]['token']) {
                $this->violation('(1) accept order != token order', [
                    'resource.log: '.$sorted[$i - 1]['line'],
                    'resource.log: '.$sorted[$i]['line'],
                ]);
            }
        }
        // The resource log and the histories tell the same story.
        $logged = [];
        $missingPerWorker = [];
        foreach ($log as $entry) {
            $key = $entry['w'].'/'.$entry['op'];
            $logged[$key] = true;
            $r = $byKey[$key] ?? null;
            if (null === $r) {
                // Only the one operation a SIGKILLed worker had in flight may miss from its history.
                $missingPerWorker[$entry['w']] = ($missingPerWorker[$entry['w']] ?? 0) + 1;
                if (!isset($this->killed[$entry['w']]) || $missingPerWorker[$entry['w']] > 1) {
                    $this->violation('(1) accepted write with no history line', ['resource.log: '.$entry['line']]);
                }
                continue;
            }
            if ('accepted' !== $r['out'] || $r['token'] !== $entry['token'] || $r['at'] !== $entry['at']) {
                $this->violation('(1) resource log and history disagree', ['resource.log: '.$entry['line'], 'history: '.json_encode($r)]);
            }
        }
        $tokens = [];
        foreach ($records as $r) {
            if ('accepted' === $r['out'] && !isset($logged[$r['w'].'/'.$r['op']])) {
                $this->violation('(1) history says accepted, resource log does not', ['history: '.json_encode($r)]);
            }
            if (isset($r['token']) && \is_int($r['token'])) {
                if (isset($tokens[$r['token']])) {
                    $this->violation('(1) two holds got the same fencing token', ['history: '.json_encode($tokens[$r['token']]), 'history: '.json_encode($r)]);
                }
                $tokens[$r['token']] = $r;
            }
        }
    }

    /**
     * @param list<array<string, mixed>> $records
     */
    private function checkExclusion(array $records): void
    {
        $running = [];
        $pausedHolds = $pausedInCs = $pausedStale = $pausedAccepted = $pausedNoToken = $overran = $runningStale = $lateNoToken = 0;
        foreach ($records as $r) {
            if (!isset($r['ta'], $r['te']) || !\in_array($r['out'], ['accepted', 'rejected-stale', 'no-token'], true)) {
                continue;
            }
            if ($this->wasPaused($r, $r['t0'], $r['t1'] ?? $r['tr'] ?? $r['te'])) {
                ++$pausedHolds;
                if ($this->wasPaused($r, $r['ta'], $r['te'])) {
                    ++$pausedInCs;
                    if ('rejected-stale' === $r['out']) {
                        ++$pausedStale;
                    } elseif ('accepted' === $r['out']) {
                        ++$pausedAccepted;
                    } else {
                        ++$pausedNoToken;
                    }
                }
                continue;
            }
            if (true !== ($r['valid'] ?? null)) {
                // Not paused, but the lease had run out by the end of the critical section (scheduling, latency,
                // an outage): a lock promises nothing then. Counted, not judged. getFencingToken() = null is right
                // for a lock that is no longer held.
                ++$overran;
                if ('no-token' === $r['out']) {
                    ++$lateNoToken;
                }
                continue;
            }
            if ('no-token' === $r['out']) {
                $this->violation('(3) getFencingToken() gave no int while the lock was held exclusively (not paused, lease still valid after)', ['history: '.json_encode($r)]);
            }
            if ('rejected-stale' === $r['out']) {
                ++$runningStale;
                $this->violation('(2) a running holder (not paused, lock still valid) was fenced off as stale: a greater token had been accepted while it held the lock', ['history: '.json_encode($r)]);
            }
            $running[] = $r;
        }
        usort($running, static fn (array $a, array $b): int => $a['ta'] <=> $b['ta']);
        $latest = null;
        foreach ($running as $r) {
            if (null !== $latest && $r['ta'] < $latest['te']) {
                $this->violation(sprintf('(2) two running holders overlapped by %.3f ms', ($latest['te'] - $r['ta']) / 1e6), [
                    'history: '.json_encode($latest),
                    'history: '.json_encode($r),
                ]);
            }
            if (null === $latest || $r['te'] > $latest['te']) {
                $latest = $r;
            }
        }
        $this->stats['running holds judged for exclusion'] = \count($running);
        $this->stats['holds of paused workers (not judged for exclusion)'] = $pausedHolds;
        $this->stats['holds paused inside the critical section'] = $pausedInCs;
        $this->stats['stale writes rejected (holder paused in its critical section)'] = $pausedStale;
        $this->stats['late writes accepted (holder paused in its critical section, no newer write yet)'] = $pausedAccepted;
        $this->stats['no fencing token after a pause (lock gone: null is right)'] = $pausedNoToken;
        $this->stats['holds past their lease, not paused (not judged)'] = $overran;
        $this->stats['  of which no fencing token (lock gone)'] = $lateNoToken;
        $this->stats['running holders fenced off (violations)'] = $runningStale;
    }

    /**
     * @param array<string, mixed> $r
     */
    private function wasPaused(array $r, int $from, int $to): bool
    {
        foreach ($this->pauses[$r['w']] ?? [] as [$stop, $cont]) {
            if ($from < $cont && $to > $stop) {
                return true;
            }
        }

        return false;
    }

    /**
     * @param list<array<string, mixed>> $records
     */
    private function checkFailures(array $records): void
    {
        foreach ($records as $r) {
            foreach (['exc', 'rexc'] as $field) {
                if (isset($r[$field]) && !str_starts_with($r[$field], 'Deadbolt\\Exception\\')) {
                    $this->violation('(3) a failure surfaced as '.$r[$field].', not a Deadbolt exception', ['history: '.json_encode($r)]);
                }
            }
        }
        foreach ($this->exits as $worker => $exit) {
            if ('' !== trim($exit['stderr'])) {
                $this->violation("(3) worker $worker wrote to stderr", [substr($exit['stderr'], 0, 2000)]);
            }
            if (!isset($this->killed[$worker]) && 0 !== $exit['exit']) {
                $this->violation("(3) worker $worker exited with ".var_export($exit['exit'], true), []);
            }
        }
    }

    /**
     * @param list<string> $evidence
     */
    private function violation(string $what, array $evidence): void
    {
        $this->violations[] = $what.("\n    ".implode("\n    ", $evidence));
    }
}
