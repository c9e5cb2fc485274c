<?php

/*
 * Lock-cycle variants measured side by side in one process (bench/flock.php, bench/redis.php).
 *
 * A variant is a closure that runs N cycles and returns how many acquires failed. After a warm-up, each round runs
 * every variant for `cycles` cycles, in slices taken in turn, the order rotating from slice to slice and from round
 * to round, so that a noisy moment hits all variants alike (one slice per round when the slice is `cycles` long).
 * A variant that throws is dropped, its error kept for a note, rather than ending the benchmark.
 */

declare(strict_types=1);

require_once __DIR__ . '/process.php';
require_once __DIR__ . '/report.php';
require_once __DIR__ . '/stats.php';

/**
 * The variant every benchmark runs for a LockFactory, symfony/lock's or Deadbolt's: createLock (with $ttl when given),
 * acquire(false), release(), over $names in turn.
 *
 * @param list<string> $names
 *
 * @return Closure(int): int
 */
function factoryCycle(object $factory, array $names, ?float $ttl = null): Closure
{
    $count = count($names);

    return static function (int $n) use ($factory, $names, $count, $ttl): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $name = $names[$i % $count];
            $lock = null === $ttl ? $factory->createLock($name) : $factory->createLock($name, $ttl);
            if ($lock->acquire(false)) {
                $lock->release();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
}

final class CycleRounds
{
    /** @var array<string, Closure(int): int> the variants still running */
    private array $variants;
    /** @var array<string, int> failed acquires per variant, all passes */
    public array $failures;
    /** @var array<string, string> variant => what it threw (describe()) */
    public array $broken = [];
    /** @var array<string, list<float>> per variant and round: µs of wall clock per cycle */
    public array $wallUs = [];
    /** @var array<string, list<float>> per variant and round: µs of CPU (user + system) per cycle */
    public array $cpuUs = [];
    /** @var array<string, list<float>> per variant and slice, all rounds: µs of wall clock per cycle */
    public array $sliceUs = [];
    private readonly int $slices;

    /** @param array<string, Closure(int): int> $variants */
    public function __construct(
        array $variants,
        private readonly int $cycles,
        private readonly int $rounds,
        private readonly int $slice,
    ) {
        $this->variants = $variants;
        $this->failures = array_fill_keys(array_keys($variants), 0);
        // The result arrays get their final size now, so that filling them does not show in the memory figures.
        $this->slices = (int) ceil($cycles / $slice);
        foreach (array_keys($variants) as $name) {
            $this->wallUs[$name] = array_fill(0, $rounds, 0.0);
            $this->cpuUs[$name] = array_fill(0, $rounds, 0.0);
            $this->sliceUs[$name] = array_fill(0, $rounds * $this->slices, 0.0);
        }
    }

    /** @return list<string> the variants still running, in the order given */
    public function names(): array
    {
        return array_keys($this->variants);
    }

    public function has(string $name): bool
    {
        return isset($this->variants[$name]);
    }

    /** Runs $n cycles of $name; false when it threw (it is then dropped). */
    public function run(string $name, int $n): bool
    {
        try {
            $this->failures[$name] += $this->variants[$name]($n);

            return true;
        } catch (Throwable $e) {
            $this->broken[$name] = describe($e);
            unset($this->variants[$name]);

            return false;
        }
    }

    /** Runs $n cycles of each variant in turn, calling $before($name) just before each. */
    public function warmUp(int $n, ?Closure $before = null): void
    {
        foreach ($this->names() as $name) {
            if ($before !== null) {
                $before($name);
            }
            $this->run($name, $n);
        }
    }

    /** The timed rounds; afterwards the timings hold the variants that never threw. */
    public function measure(): void
    {
        for ($round = 0; $round < $this->rounds; ++$round) {
            $wall = $cpu = array_fill_keys($this->names(), 0.0);
            for ($slice = 0; $slice < $this->slices; ++$slice) {
                $n = min($this->slice, $this->cycles - $slice * $this->slice);
                $order = $this->names();
                $shift = count($order) === 0 ? 0 : ($round + $slice) % count($order);
                foreach (array_merge(array_slice($order, $shift), array_slice($order, 0, $shift)) as $name) {
                    $c0 = cpuUs();
                    $t0 = hrtime(true);
                    if ($this->run($name, $n)) {
                        $elapsed = (hrtime(true) - $t0) / 1e3;
                        $wall[$name] += $elapsed;
                        $cpu[$name] += cpuUs() - $c0;
                        $this->sliceUs[$name][$round * $this->slices + $slice] = $elapsed / $n;
                    }
                }
            }
            foreach ($this->names() as $name) {
                $this->wallUs[$name][$round] = $wall[$name] / $this->cycles;
                $this->cpuUs[$name][$round] = $cpu[$name] / $this->cycles;
            }
        }
        foreach (array_keys($this->broken) as $name) {
            unset($this->wallUs[$name], $this->cpuUs[$name], $this->sliceUs[$name]);
        }
    }

    /** @return array<string, float> median µs per cycle of each variant that never threw */
    public function medians(): array
    {
        return array_map('median', array_filter($this->wallUs));
    }
}
