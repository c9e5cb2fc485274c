<?php

/*
 * Semaphores: Deadbolt against symfony/semaphore and Laravel's Redis funnel, one run, ratios.
 *
 *   bash scripts/redis-start.sh /tmp/deadbolt-bench-redis     # prints PORT (stop: scripts/redis-stop.sh DIR)
 *   php -d extension=target/release/libdeadbolt.so bench/semaphore.php --port=PORT [CYCLES [ROUNDS]]
 *       [--procs=16] [--limit=4] [--sections=200] [--hold=1000] [--seconds=10]
 *
 * 1. The cycle: create a semaphore (limit 4, weight 1) on one of 64 names, acquire it without waiting, release it;
 *    CYCLES (4000) per variant and round, the variants interleaved, ROUNDS (3) rounds, median. Redis commands per
 *    cycle from INFO commandstats. Variants:
 *      symfony/semaphore   symfony/semaphore 5.4 (Debian) RedisStore over phpredis: three scripts sent whole per cycle
 *                          (save, delete; exists is not asked), client clock
 *      Laravel funnel      Illuminate\Redis\Limiters\ConcurrencyLimiter (Laravel 8, Debian), what Redis::funnel()
 *                          builds: block(0, $work) = one attempt (MGET of the slot keys + SET), $work, release
 *      Deadbolt DSN        Deadbolt\Semaphore\SemaphoreFactory on RedisStore('redis://...')
 *      Deadbolt \Redis     the same over the phpredis client
 * 2. Contention: P (16) processes on ONE semaphore of limit L (4), each doing sections (acquire, hold `hold` µs,
 *    release) until it has done `sections` or `seconds` have passed. Deadbolt waits with acquire(true) (a release
 *    hands the slot to the longest waiter); symfony/semaphore has no waiting acquire, so it retries every 90-110 ms
 *    as symfony/lock's blocking acquire does; Laravel's funnel block() retries every 250 ms. Per variant: sections
 *    per second, wait per acquire (median, p99, max) and the most holders seen at once (each holder INCRs a Redis
 *    counter after its acquire and DECRs it before its release): never over L.
 *
 * Env: DEADBOLT_REDIS_PORT.
 */

declare(strict_types=1);

require_once __DIR__ . '/support/cli.php';
require_once __DIR__ . '/support/report.php';
require_once __DIR__ . '/support/stats.php';
require_once __DIR__ . '/support/worker_pool.php';

const SYMFONY = 'symfony/semaphore';
const LARAVEL = 'Laravel funnel';
const DEADBOLT_DSN = 'Deadbolt DSN';
const DEADBOLT_CLIENT = 'Deadbolt \Redis';

$cli = new Cli('bench/semaphore.php', 'usage: php bench/semaphore.php --port=PORT [CYCLES [ROUNDS]] [--procs=16] [--limit=4] [--sections=200] [--hold=1000] [--seconds=10]');
[$options, $positional] = $cli->arguments($argv, ['port', 'procs', 'limit', 'sections', 'hold', 'seconds']);
$port = $cli->port((string) ($options['port'] ?? (getenv('DEADBOLT_REDIS_PORT') ?: $cli->fail('a Redis port is needed'))));
$cycles = $cli->positional($positional, 0, 4000, 'CYCLES');
$rounds = $cli->positional($positional, 1, 3, 'ROUNDS');
$procs = $cli->positive((string) ($options['procs'] ?? 16), '--procs');
$limit = $cli->positive((string) ($options['limit'] ?? 4), '--limit');
$sections = $cli->positive((string) ($options['sections'] ?? 200), '--sections');
$hold = $cli->positive((string) ($options['hold'] ?? 1000), '--hold');
$seconds = $cli->positive((string) ($options['seconds'] ?? 10), '--seconds');

require_once '/usr/share/php/Symfony/Component/Semaphore/autoload.php';
$laravel = is_file('/usr/share/php/Illuminate/Redis/autoload.php');
if ($laravel) {
    require_once '/usr/share/php/Illuminate/Redis/autoload.php';
}

function phpredis(int $port): Redis
{
    $redis = new Redis();
    $redis->connect('127.0.0.1', $port);

    return $redis;
}

/**
 * One semaphore cycle per variant: acquire (no wait), release. Returns whether it was acquired.
 *
 * @return array<string, Closure(string): bool>
 */
function cycleVariants(int $port, int $limit, bool $laravel): array
{
    $symfony = new Symfony\Component\Semaphore\SemaphoreFactory(new Symfony\Component\Semaphore\Store\RedisStore(phpredis($port)));
    $dsn = new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore("redis://127.0.0.1:$port"));
    $client = new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore(phpredis($port)));
    $variants = [
        SYMFONY => static function (string $name) use ($symfony, $limit): bool {
            $semaphore = $symfony->createSemaphore($name, $limit, 1, 30.0);
            $got = $semaphore->acquire();
            $semaphore->release();
            return $got;
        },
        DEADBOLT_DSN => static fn (string $name): bool => deadboltCycle($dsn, $name, $limit),
        DEADBOLT_CLIENT => static fn (string $name): bool => deadboltCycle($client, $name, $limit),
    ];
    if ($laravel) {
        $connection = new Illuminate\Redis\Connections\PhpRedisConnection(phpredis($port));
        $variants[LARAVEL] = static function (string $name) use ($connection, $limit): bool {
            try {
                return (new Illuminate\Redis\Limiters\ConcurrencyLimiter($connection, $name, $limit, 30))->block(0, static fn (): bool => true);
            } catch (Illuminate\Contracts\Redis\LimiterTimeoutException) {
                return false;
            }
        };
    }

    return $variants;
}

function deadboltCycle(Deadbolt\Semaphore\SemaphoreFactory $factory, string $name, int $limit): bool
{
    $semaphore = $factory->createSemaphore($name, $limit, 1, 30.0);
    $got = $semaphore->acquire();
    $semaphore->release();

    return $got;
}

/** Redis commands the server has run so far (INFO commandstats), INFO itself left out. */
function commandsRun(Redis $redis): int
{
    $total = 0;
    foreach ($redis->info('commandstats') as $name => $line) {
        if ($name !== 'cmdstat_info' && preg_match('/calls=(\d+)/', (string) $line, $m) === 1) {
            $total += (int) $m[1];
        }
    }

    return $total;
}

/** @return array<string, array{us: float, commands: float}> */
function runCycles(int $port, int $limit, bool $laravel, int $cycles, int $rounds): array
{
    $variants = cycleVariants($port, $limit, $laravel);
    $inspector = phpredis($port);
    $times = [];
    $commands = [];
    for ($round = 0; $round < $rounds; ++$round) {
        foreach ($variants as $name => $cycle) {
            $before = commandsRun($inspector);
            $start = hrtime(true);
            for ($i = 0; $i < $cycles; ++$i) {
                if (!$cycle("bench:semaphore:$name:" . ($i % 64))) {
                    throw new RuntimeException("$name: a free semaphore was refused");
                }
            }
            $times[$name][] = (hrtime(true) - $start) / 1e3 / $cycles;
            $commands[$name] = (commandsRun($inspector) - $before - 1) / $cycles;
        }
    }
    $result = [];
    foreach ($variants as $name => $_) {
        $result[$name] = ['us' => median($times[$name]), 'commands' => $commands[$name]];
    }

    return $result;
}

/**
 * One process's sections under the variant's waiting acquire.
 *
 * @return array{waits: list<float>, most: int, sections: int}
 */
function contend(string $variant, int $port, string $resource, int $limit, int $sections, int $hold, float $until): array
{
    $counter = phpredis($port);
    $waits = [];
    $most = 0;
    [$take, $give] = waitingVariant($variant, $port, $resource, $limit);
    $done = 0;
    while ($done < $sections && microtime(true) < $until) {
        $asked = hrtime(true);
        $held = $take();
        $waits[] = (hrtime(true) - $asked) / 1e6;
        $most = max($most, (int) $counter->incr("$resource:holders"));
        usleep($hold);
        $counter->decr("$resource:holders");
        $give($held);
        ++$done;
    }

    return ['waits' => $waits, 'most' => $most, 'sections' => $done];
}

/**
 * A waiting acquire and its release, per variant.
 *
 * @return array{Closure(): mixed, Closure(mixed): void}
 */
function waitingVariant(string $variant, int $port, string $resource, int $limit): array
{
    switch ($variant) {
        case DEADBOLT_DSN:
            $factory = new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore("redis://127.0.0.1:$port"));
            return [
                static function () use ($factory, $resource, $limit) {
                    $semaphore = $factory->createSemaphore($resource, $limit, 1, 30.0);
                    $semaphore->acquire(true, 60.0) || throw new RuntimeException('a 60 s wait ran out');
                    return $semaphore;
                },
                static fn ($semaphore) => $semaphore->release(),
            ];
        case SYMFONY:
            $factory = new Symfony\Component\Semaphore\SemaphoreFactory(new Symfony\Component\Semaphore\Store\RedisStore(phpredis($port)));
            return [
                static function () use ($factory, $resource, $limit) {
                    $semaphore = $factory->createSemaphore($resource, $limit, 1, 30.0);
                    while (!$semaphore->acquire()) {
                        usleep(random_int(90_000, 110_000));
                    }
                    return $semaphore;
                },
                static fn ($semaphore) => $semaphore->release(),
            ];
        default:
            // Laravel's funnel holds the slot while its callback runs: the section runs in a fiber that the
            // callback suspends, so that the hold and the release happen where the other variants' do.
            $connection = new Illuminate\Redis\Connections\PhpRedisConnection(phpredis($port));
            return [
                static function () use ($connection, $resource, $limit) {
                    $fiber = new Fiber(static function () use ($connection, $resource, $limit): void {
                        (new Illuminate\Redis\Limiters\ConcurrencyLimiter($connection, $resource, $limit, 30))
                            ->block(60, static fn () => Fiber::suspend());
                    });
                    $fiber->start();
                    return $fiber;
                },
                static fn ($fiber) => $fiber->resume(),
            ];
    }
}

/** @return array<string, array{rate: float, p50: float, p99: float, max: float, most: int, sections: int}> */
function runContention(array $variants, int $port, int $procs, int $limit, int $sections, int $hold, int $seconds): array
{
    $pool = new WorkerPool($seconds + 120);
    $dir = sys_get_temp_dir() . '/deadbolt-bench-semaphore-' . getmypid();
    @mkdir($dir);
    $out = [];
    foreach ($variants as $variant) {
        $resource = 'bench:semaphore:contention:' . str_replace([' ', '/', '\\'], '-', $variant) . ':' . getmypid();
        phpredis($port)->del("$resource:holders");
        $start = 0.0;
        $run = $pool->run($procs, "$dir/result", static function (int $worker, Closure $barrier) use ($variant, $port, $resource, $limit, $sections, $hold, $seconds): array {
            try {
                $barrier();
                return contend($variant, $port, $resource, $limit, $sections, $hold, microtime(true) + $seconds);
            } catch (Throwable $e) {
                return ['error' => describe($e)];
            }
        });
        $elapsed = (hrtime(true) - $run['start']) / 1e9;
        $waits = [];
        $most = 0;
        $total = 0;
        foreach ($run['results'] as $worker => $result) {
            if ($result === null || isset($result['error'])) {
                throw new RuntimeException("$variant worker $worker: " . ($result['error'] ?? 'no result'));
            }
            array_push($waits, ...$result['waits']);
            $most = max($most, $result['most']);
            $total += $result['sections'];
        }
        sort($waits);
        $out[$variant] = [
            'rate' => $total / $elapsed,
            'p50' => percentile($waits, 0.50),
            'p99' => percentile($waits, 0.99),
            'max' => end($waits),
            'most' => $most,
            'sections' => $total,
        ];
    }
    @rmdir($dir);

    return $out;
}

printf("Semaphores, Redis %s on 127.0.0.1:%d, PHP %s\n\n", phpredis($port)->info('server')['redis_version'], $port, PHP_VERSION);
printf("1. Cycle: create (limit %d, weight 1), acquire without waiting, release; %d cycles x %d rounds, median\n\n", $limit, $cycles, $rounds);
$cyclesResult = runCycles($port, $limit, $laravel, $cycles, $rounds);
$widths = [18, 12, 16, 16];
row($widths, 'variant', 'µs/cycle', 'vs symfony', 'Redis commands');
rule($widths);
foreach ($cyclesResult as $name => $r) {
    row($widths, $name, sprintf('%.1f', $r['us']), sprintf('%.2fx', $r['us'] / $cyclesResult[SYMFONY]['us']), sprintf('%.1f', $r['commands']));
}
if (!$laravel) {
    echo "(Laravel funnel: php-laravel-framework is not installed)\n";
}

printf("\n2. Contention: %d processes on ONE semaphore of limit %d, %d sections each (at most %d s), hold %d µs\n\n", $procs, $limit, $sections, $seconds, $hold);
$variants = [SYMFONY, DEADBOLT_DSN];
if ($laravel) {
    $variants[] = LARAVEL;
}
$contention = runContention($variants, $port, $procs, $limit, $sections, $hold, $seconds);
$widths = [18, 10, 12, 10, 10, 10, 12];
row($widths, 'variant', 'sections', 'sections/s', 'p50 ms', 'p99 ms', 'max ms', 'most held');
rule($widths);
foreach ($contention as $name => $r) {
    row($widths, $name, (string) $r['sections'], sprintf('%.0f', $r['rate']), sprintf('%.2f', $r['p50']), sprintf('%.1f', $r['p99']), sprintf('%.1f', $r['max']), sprintf('%d of %d', $r['most'], $limit));
}
printf("\nDeadbolt's throughput: %.1fx symfony/semaphore's%s\n", $contention[DEADBOLT_DSN]['rate'] / $contention[SYMFONY]['rate'],
    $laravel ? sprintf(', %.1fx Laravel funnel\'s', $contention[DEADBOLT_DSN]['rate'] / $contention[LARAVEL]['rate']) : '');
foreach ($contention as $name => $r) {
    if ($r['most'] > $limit) {
        printf("%s: %d held at once, over the limit of %d\n", $name, $r['most'], $limit);
        exit(1);
    }
}
