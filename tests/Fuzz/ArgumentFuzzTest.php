<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Fuzz;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\RedisServer;

/**
 * Random arguments against the whole PHP surface of the extension, in child php processes, so that a crash is seen.
 *
 * Every public method and constructor of every class of the loaded extension (found by Reflection, so a new method is
 * fuzzed without touching this file) is called with random values (ints, floats
 * with NAN/INF/-0.0/huge, strings: empty, binary, 1 MB, "__write__", DSNs with junk; arrays, nested arrays, stdClass,
 * closures, loggers (one throws), other Deadbolt objects, \Redis objects, null, bools), random arity and named
 * arguments, and engine operations on live objects (serialize, unserialize, clone, var_dump, print_r, json_encode,
 * var_export, casts, comparison, iteration, gc). Half the batches call in strict_types mode, half in coercive mode.
 *
 * A batch is a fresh `php -d extension=...` process (tests/Fuzz/fuzz_child.php) seeded with mt_srand(SEED); it prints
 * "C i <call>" before and "R i <outcome>" after each call. The batch must exit 0 with nothing on stderr and nothing in
 * its error_log, and every outcome must be allowed (see self::ALLOWED). A crash names the seed, the strictness, the
 * call that crashed and the calls before it; `php -d extension=... tests/Fuzz/fuzz_child.php SEED COUNT PORT DIR
 * STRICT LOG` replays a batch.
 *
 * Waits without a deadline are made bounded by the child (Lock::acquire(true) gets timeout 0.05; waitAndSave* runs
 * after every lock of the batch was released and the private Redis flushed), so a batch always ends.
 *
 * Short run: 20 batches x 150 calls = 3000 calls. DEADBOLT_SOAK=1: 400 batches x 250 calls = 100000 calls.
 */
final class ArgumentFuzzTest extends DeadboltTestCase
{
    /**
     * Outcomes besides OK, Deadbolt\Exception\*, \TypeError, \ArgumentCountError and \ValueError, with the reason each
     * one is right.
     *
     * @var array<string, string> regex on "Class: message" => reason
     */
    private const ALLOWED = [
        // clone: Lock is documented uncloneable; Key, stores, factories, exceptions of the extension and \Redis are
        // native objects without a clone handler: the engine refuses.
        '/^Error: Trying to clone an uncloneable object of class [\w\\\\]+$/' => 'engine refusal of clone (API-CONTRACT: Lock clone throws \Error)',
        // Named-argument mistakes are refused by the engine before the method runs.
        '/^Error: Unknown named parameter \$\w+$/' => 'engine: named argument that the method does not have',
        '/^Error: Named parameter \$\w+ overwrites previous argument$/' => 'engine: positional and named argument for the same parameter',
        // (string) on an object without __toString.
        '/^Error: Object of class [\w\\\\]+ could not be converted to string$/' => 'engine: string cast of a non-Stringable object',
        // serialize() of native objects the extension marks not serializable (stores, factories, Metrics...).
        "/^Exception: (Serialization|Unserialization) of '[\\w\\\\]+' is not allowed$/" => 'engine rule for classes flagged not serializable',
        // Deadbolt\Lock::__serialize/__unserialize (API-CONTRACT: both throw \BadMethodCallException).
        '/^BadMethodCallException: Cannot (un)?serialize Deadbolt\\\\Lock\.$/' => 'API-CONTRACT: a Lock is not serializable',
        '/^BadMethodCallException: A Deadbolt\\\\[A-Za-z\\\\]+ cannot be rebuilt from var_export\(\) output/' => 'API-CONTRACT: __set_state() always refuses',
        // StoreFactory's and Metrics' generated constructors (API-CONTRACT: StoreFactory section).
        '/^Exception: You cannot instantiate this class from PHP\.$/' => 'API-CONTRACT: static-only classes refuse construction',
        // The fuzzer's own throwing logger: the records reach the logger, its exception comes back out.
        '/^RuntimeException: fuzz logger boom$/' => 'the fuzzer\'s throwing logger (an application exception passes through)',
        // Methods of \Exception inherited by the exception classes, given wrong types, behave like PHP's own.
    ];

    private ?RedisServer $server = null;

    protected function tearDown(): void
    {
        $this->server?->stop();
        $this->server = null;
    }

    public function testRandomCallsNeverCrashTheProcess(): void
    {
        $soak = '1' === getenv('DEADBOLT_SOAK');
        $this->fuzz($soak ? 400 : 20, $soak ? 250 : 150, 0x5eed_0000);
    }

    private function fuzz(int $batches, int $callsPerBatch, int $baseSeed): void
    {
        $this->server = RedisServer::start();
        $failures = [];
        $total = 0;
        $outcomes = [];
        for ($b = 0; $b < $batches; ++$b) {
            $seed = $baseSeed + $b;
            $strict = $b % 2;
            $dir = $this->tempDir();
            $errorLog = $dir.'/error.log';
            $args = [$seed, $callsPerBatch, $this->server->port, $dir.'/locks', $strict, $errorLog];
            $replay = sprintf('php -d extension=%s tests/Fuzz/fuzz_child.php %s', DEADBOLT_SO, implode(' ', $args));
            try {
                $result = PhpProcess::run(
                    '$argv = array_merge(["fuzz_child.php"], array_map("strval", $vars["args"])); require $vars["child"];',
                    ['args' => $args, 'child' => __DIR__.'/fuzz_child.php'],
                    true,
                    300.0,
                );
            } catch (\RuntimeException $e) {
                $failures[] = "seed $seed strict=$strict: the batch hung (killed).\nreplay: $replay\n".self::lastCalls($e->getMessage());
                continue;
            }
            $lines = explode("\n", rtrim($result['stdout'], "\n"));
            $calls = [];
            $done = false;
            foreach ($lines as $line) {
                if (1 === preg_match('/^C (\d+) (.*)$/s', $line, $m)) {
                    $calls[(int) $m[1]] = $m[2];
                } elseif (1 === preg_match('/^R (\d+) (.*)$/s', $line, $m)) {
                    ++$total;
                    $outcome = preg_replace('/ \[notices: .*\]$/', '', $m[2]);
                    $verdict = self::classify($outcome);
                    $outcomes[$verdict] = ($outcomes[$verdict] ?? 0) + 1;
                    if ('unexpected' === $verdict) {
                        $failures[] = "seed $seed strict=$strict call {$m[1]}: {$calls[(int) $m[1]]}\n  -> $outcome\nreplay: $replay";
                    }
                } elseif (str_starts_with($line, 'DONE ')) {
                    $done = true;
                }
            }
            $log = is_file($errorLog) ? (string) file_get_contents($errorLog) : '';
            if (0 !== $result['exit'] || !$done || '' !== $result['stderr'] || '' !== $log) {
                $crashed = array_key_last($calls);
                $failures[] = sprintf(
                    "seed %d strict=%d: the batch process exited %d%s after call %s: %s\nreplay: %s\nlast calls:\n%s\nstderr: %s\nerror_log: %s",
                    $seed,
                    $strict,
                    $result['exit'],
                    255 === $result['exit'] ? ' (PHP fatal error)' : ($result['exit'] > 128 && $result['exit'] < 160 ? ' (killed by signal '.($result['exit'] - 128).')' : ''),
                    $crashed ?? '-',
                    null === $crashed ? '-' : $calls[$crashed],
                    $replay,
                    implode("\n", \array_slice(array_map(static fn ($k, $v) => "  $k: ".substr($v, 0, 300), array_keys($calls), $calls), -15)),
                    substr($result['stderr'], 0, 3000),
                    substr($log, 0, 2000),
                );
            }
        }
        $this->assertTrue([] === $failures, str_replace("\0", '\\0', sprintf(
            "%d of %d calls went wrong (outcomes: %s):\n\n%s",
            \count($failures),
            $total,
            json_encode($outcomes),
            implode("\n\n", \array_slice($failures, 0, 40))
        )));
        $this->assertGreaterThanOrEqual((int) ($batches * $callsPerBatch * 0.95), $total, 'the batches made their calls');
        $this->assertGreaterThan($total / 10, $outcomes['ok'] ?? 0, 'enough calls succeed for the fuzzer to reach deep states');
    }

    private static function classify(string $outcome): string
    {
        if ('OK' === $outcome) {
            return 'ok';
        }
        if (1 === preg_match('/^THROW (Deadbolt\\\\(Semaphore\\\\)?Exception\\\\\w+|TypeError|ArgumentCountError|ValueError): /', $outcome)) {
            return 'expected exception';
        }
        foreach (self::ALLOWED as $pattern => $reason) {
            if (1 === preg_match($pattern, substr($outcome, 6))) {
                return 'allowed: '.$reason;
            }
        }

        return 'unexpected';
    }

    private static function lastCalls(string $text): string
    {
        preg_match_all('/^C (\d+) (.*)$/m', $text, $m);

        return implode("\n", \array_slice($m[0], -10));
    }
}
