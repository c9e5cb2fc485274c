<?php

/*
 * Redis lock cycle benchmark: one cycle = create a lock, acquire it non-blocking, release it.
 *
 *   bash scripts/redis-start.sh /tmp/deadbolt-bench-redis     # prints PORT (stop: scripts/redis-stop.sh DIR)
 *   php -d extension=target/release/libdeadbolt.so bench/redis.php --port=PORT [cycles=20000] [names=64] [rounds=5]
 *
 * The port may also come from the environment: DEADBOLT_REDIS_PORT=PORT php ... bench/redis.php. The server must be
 * a private one on 127.0.0.1: the command counts start with CONFIG RESETSTAT.
 *
 * Variants, measured side by side in one process:
 *   (a) phpredis SET key token NX PX 30000 + DEL key: two round trips, the floor for any Redis lock
 *   (b) phpredis SET NX PX + Lua compare-and-delete sent whole with EVAL (the OTA service's legacy lock)
 *   (c) symfony/lock 5.4 RedisStore over phpredis: LockFactory::createLock($name, 30) + acquire(false) + release()
 *   (d) symfony/lock 5.4 RedisStore over Predis
 *   (e) Deadbolt RedisStore by DSN (redis://127.0.0.1:PORT, native connection), the same three calls
 *   (f) Deadbolt RedisStore over the same \Redis object as (a), (b), (c)
 *   (g) Deadbolt RedisStore over the same Predis client as (d)
 *   (s) reference, not a lock library: the smallest pair of Lua scripts (EVALSHA) that keeps symfony/lock's data model
 *   (r) not a lock: one phpredis PING, a bare round trip to read the rows against
 *
 * After a warm-up, every round runs each variant for `cycles` cycles, in slices of 250 cycles taken in turn with the
 * order rotating, so that machine noise hits all variants alike. The table shows the median round per variant, ratios
 * to (a) and (c), the php process's CPU time and Redis' execution time per cycle.
 * Then, per variant, a dedicated pass of `cycles` cycles between CONFIG RESETSTAT and INFO commandstats counts the
 * commands Redis executed (commands called by scripts included), and a short pass under MONITOR counts what the
 * client itself sent (round trips). Without the extension the Deadbolt rows are left out and a note says so; a
 * variant whose library is missing, or that throws, is left out with a note too.
 *
 * Every resource name carries a prefix unique to the run (deadbolt-bench:<random>:<variant>:<n>). At the end (also
 * after an error) every key whose name contains that prefix is deleted, the lock keys and the keys a store derives
 * from them (Deadbolt's deadbolt:fence:{name}, deadbolt:waiters:{name} and deadbolt:waiting:{name}); what remained after release is reported.
 *
 * Env: DEADBOLT_REDIS_PORT (when --port is not given), SYMFONY_LOCK_AUTOLOAD, PREDIS_AUTOLOAD (library paths).
 */

declare(strict_types=1);

const SYMFONY_AUTOLOAD = '/usr/share/php/Symfony/Component/Lock/autoload.php';
const PREDIS_AUTOLOAD = '/usr/share/php/Predis/autoload.php';
const HOST = '127.0.0.1';
const USAGE = 'usage: php bench/redis.php --port=PORT [cycles=20000] [names=64] [rounds=5]   (or DEADBOLT_REDIS_PORT=PORT)';
/** Cycles of the MONITOR pass (its output is buffered by Redis until read: keep it short). */
const MONITOR_CYCLES = 500;
/** Cycles a variant runs before the next one takes its turn, within a round. */
const SLICE = 250;

function usage(string $error): never
{
    fwrite(STDERR, "bench/redis.php: $error\n" . USAGE . "\n"
        . "A private server: bash scripts/redis-start.sh DIR prints a port; scripts/redis-stop.sh DIR stops it.\n");
    exit(2);
}

function positive(string $value, string $name): int
{
    if (preg_match('/^\d{1,9}$/', $value) !== 1 || (int) $value < 1) {
        usage("$name must be a positive integer, got '$value'");
    }

    return (int) $value;
}

/** Resident set size of this process in KiB, from /proc (null where there is no /proc). */
function vmRssKib(): ?int
{
    $status = @file_get_contents('/proc/self/status');
    if ($status !== false && preg_match('/^VmRSS:\s+(\d+)\s+kB/m', $status, $m) === 1) {
        return (int) $m[1];
    }

    return null;
}

function median(array $values): float
{
    sort($values);
    $n = count($values);

    return $n % 2 === 1 ? $values[intdiv($n, 2)] : ($values[$n / 2 - 1] + $values[$n / 2]) / 2;
}

/** One table row; widths count characters, not bytes (µ is two bytes in UTF-8). */
function row(array $widths, string ...$cells): void
{
    $out = [];
    foreach ($cells as $i => $cell) {
        $pad = str_repeat(' ', max(0, $widths[$i] - preg_match_all('/[^\x80-\xBF]/', $cell)));
        $out[] = $i === 0 ? $cell . $pad : $pad . $cell;
    }
    echo rtrim(implode('  ', $out)), "\n";
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

/** CPU time (user + system) this process has used so far, in µs. */
function cpuUs(): float
{
    $u = getrusage();

    return ($u['ru_utime.tv_sec'] + $u['ru_stime.tv_sec']) * 1e6 + $u['ru_utime.tv_usec'] + $u['ru_stime.tv_usec'];
}

/** The CPUs a process may run on (Cpus_allowed_list in /proc), or null where that cannot be read. */
function cpusAllowed(string $pid): ?string
{
    $status = @file_get_contents("/proc/$pid/status");

    return $status !== false && preg_match('/^Cpus_allowed_list:\s*(\S+)/m', $status, $m) === 1 ? $m[1] : null;
}

/**
 * A minimal RESP2 client on a plain socket, for the measuring connection and MONITOR: it depends on neither phpredis
 * nor Predis, so the counts and the clean-up work whichever client library is installed.
 */
final class Resp
{
    /** @var resource */
    private $socket;

    public function __construct(string $host, int $port)
    {
        $socket = @stream_socket_client("tcp://$host:$port", $errno, $error, 2.0);
        if ($socket === false) {
            throw new RuntimeException("cannot connect to Redis at $host:$port: $error");
        }
        stream_set_timeout($socket, 30);
        $this->socket = $socket;
    }

    /** host:port of this end of the connection, as MONITOR shows it. */
    public function localAddress(): string
    {
        return (string) stream_socket_get_name($this->socket, false);
    }

    public function send(string ...$args): void
    {
        $out = '*' . count($args) . "\r\n";
        foreach ($args as $arg) {
            $out .= '$' . strlen($arg) . "\r\n" . $arg . "\r\n";
        }
        for ($written = 0; $written < strlen($out); $written += $n) {
            $n = fwrite($this->socket, substr($out, $written));
            if ($n === false || $n === 0) {
                throw new RuntimeException('Redis connection lost while writing');
            }
        }
    }

    /** @return mixed the reply; an error reply is thrown as a RuntimeException */
    public function call(string ...$args): mixed
    {
        $this->send(...$args);

        return $this->read();
    }

    public function readLine(): string
    {
        $line = fgets($this->socket);
        if ($line === false) {
            throw new RuntimeException('Redis connection lost or timed out while reading');
        }

        return rtrim($line, "\r\n");
    }

    public function read(): mixed
    {
        $line = $this->readLine();
        $payload = substr($line, 1);
        switch ($line[0] ?? '') {
            case '+':
                return $payload;
            case '-':
                throw new RuntimeException("Redis error: $payload");
            case ':':
                return (int) $payload;
            case '$':
                if ((int) $payload < 0) {
                    return null;
                }
                $data = '';
                while (strlen($data) < (int) $payload + 2) {
                    $chunk = fread($this->socket, (int) $payload + 2 - strlen($data));
                    if ($chunk === false || $chunk === '') {
                        throw new RuntimeException('Redis connection lost while reading');
                    }
                    $data .= $chunk;
                }

                return substr($data, 0, -2);
            case '*':
                if ((int) $payload < 0) {
                    return null;
                }
                $items = [];
                for ($i = 0; $i < (int) $payload; ++$i) {
                    $items[] = $this->read();
                }

                return $items;
        }
        throw new RuntimeException("unexpected reply from Redis: $line");
    }

    public function close(): void
    {
        fclose($this->socket);
    }
}

/**
 * @return array<string, array{int, int}> per command name (e.g. "evalsha", "script|load"), from INFO commandstats:
 *   [calls, µs Redis spent executing them]
 */
function commandStats(Resp $redis): array
{
    $stats = [];
    foreach (explode("\n", (string) $redis->call('INFO', 'commandstats')) as $line) {
        if (preg_match('/^cmdstat_([^:]+):calls=(\d+),usec=(\d+)/', trim($line), $m) === 1) {
            $stats[$m[1]] = [(int) $m[2], (int) $m[3]];
        }
    }

    return $stats;
}

/**
 * The keys of this run: every key whose name contains the run prefix, the lock keys themselves and whatever a store
 * derives from a resource name (Deadbolt's deadbolt:fence:{name} and deadbolt:waiters:{name}, for instance).
 *
 * @return array<string, array<string, list<string>>> variant letter => key shape (the resource name replaced by NAME)
 *   => keys
 */
function keysOfRun(Resp $redis, string $prefix): array
{
    $found = [];
    $cursor = '0';
    do {
        [$cursor, $keys] = $redis->call('SCAN', $cursor, 'MATCH', '*' . $prefix . '*', 'COUNT', '1000');
        foreach ($keys as $key) {
            if (preg_match('/' . preg_quote($prefix, '/') . '([a-z]+):\d+/', $key, $m, PREG_OFFSET_CAPTURE) === 1) {
                $shape = substr_replace($key, 'NAME', $m[0][1], strlen($m[0][0]));
                $found[$m[1][0]][$shape][] = $key;
            }
        }
    } while ($cursor !== '0');

    return $found;
}

// ---------------------------------------------------------------------------------------------------------------
// Arguments and connections

$port = getenv('DEADBOLT_REDIS_PORT') ?: null;
$positional = [];
foreach (array_slice($argv, 1) as $arg) {
    if (str_starts_with($arg, '--port=')) {
        $port = substr($arg, 7);
    } elseif ($arg === '-h' || $arg === '--help') {
        echo USAGE, "\n";
        exit(0);
    } else {
        $positional[] = $arg;
    }
}
if ($port === null) {
    usage('no Redis port: pass --port=PORT or set DEADBOLT_REDIS_PORT');
}
$port = positive((string) $port, 'port');
if ($port > 65535 || count($positional) > 3) {
    usage($port > 65535 ? "no such port: $port" : 'too many arguments');
}
$cycles = isset($positional[0]) ? positive($positional[0], 'cycles') : 20000;
$nameCount = isset($positional[1]) ? positive($positional[1], 'names') : 64;
$rounds = isset($positional[2]) ? positive($positional[2], 'rounds') : 5;
$warmup = min($cycles, 2000);
$monitorCycles = min($cycles, MONITOR_CYCLES);

try {
    $meter = new Resp(HOST, $port);
    $meter->call('PING');
    $serverInfo = (string) $meter->call('INFO', 'server');
    $redisVersion = preg_match('/^redis_version:(\S+)/m', $serverInfo, $m) === 1 ? $m[1] : '?';
    $redisPid = preg_match('/^process_id:(\d+)/m', $serverInfo, $m) === 1 ? $m[1] : null;
} catch (RuntimeException $e) {
    usage($e->getMessage() . ' (is redis-server running? bash scripts/redis-start.sh DIR prints a port)');
}

$prefix = sprintf('deadbolt-bench:%s:', bin2hex(random_bytes(6)));
/** Deletes the keys of this run; returns what it found: letter => shape => [count, PTTL of one of them in ms]. */
$cleanUp = static function () use ($meter, $prefix): array {
    $found = [];
    foreach (keysOfRun($meter, $prefix) as $letter => $shapes) {
        foreach ($shapes as $shape => $keys) {
            $found[$letter][$shape] = [count($keys), (int) $meter->call('PTTL', $keys[0])];
            foreach (array_chunk($keys, 500) as $chunk) {
                $meter->call('DEL', ...$chunk);
            }
        }
    }

    return $found;
};
// Also on a fatal error, an exception or Ctrl-C (exit runs the shutdown functions): no key of this run stays behind.
if (function_exists('pcntl_async_signals')) {
    pcntl_async_signals(true);
    foreach ([SIGINT, SIGTERM] as $signal) {
        pcntl_signal($signal, static function (int $signal): never {
            fwrite(STDERR, "bench/redis.php: interrupted, deleting this run's keys\n");
            exit(128 + $signal);
        });
    }
}
register_shutdown_function(static function () use ($cleanUp): void {
    try {
        $cleanUp();
    } catch (Throwable) {
    }
});
$cleanUp();

/** @return list<string> the resource names (= Redis keys) of one variant */
$namesFor = static function (string $letter) use ($prefix, $nameCount): array {
    $names = [];
    for ($i = 0; $i < $nameCount; ++$i) {
        $names[] = sprintf('%s%s:%d', $prefix, $letter, $i);
    }

    return $names;
};

$notes = [];
$libraries = [];
$phpredis = null;
if (extension_loaded('redis')) {
    $phpredis = new Redis();
    $phpredis->connect(HOST, $port, 2.0);
    $libraries[] = 'phpredis ' . phpversion('redis');
} else {
    $notes[] = 'The redis (phpredis) extension is not loaded: (a), (b), (c) and (f) are missing, and so are the ratios to'
        . ' (a) and (c).';
}

$predis = null;
$predisAutoload = getenv('PREDIS_AUTOLOAD') ?: PREDIS_AUTOLOAD;
if (is_file($predisAutoload)) {
    require_once $predisAutoload;
    $predis = new Predis\Client(['scheme' => 'tcp', 'host' => HOST, 'port' => $port, 'timeout' => 2.0]);
    $predis->connect();
    $libraries[] = 'Predis ' . Predis\Client::VERSION;
} else {
    $notes[] = "Predis not found at $predisAutoload (apt install php-predis, or set PREDIS_AUTOLOAD): (d) and (g) are"
        . ' missing.';
}

$symfonyAutoload = getenv('SYMFONY_LOCK_AUTOLOAD') ?: SYMFONY_AUTOLOAD;
$haveSymfony = is_file($symfonyAutoload);
if ($haveSymfony) {
    require_once $symfonyAutoload;
    $libraries[] = 'symfony/lock from ' . dirname($symfonyAutoload);
} else {
    $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set SYMFONY_LOCK_AUTOLOAD):"
        . ' (c) and (d) are missing, and so are the ratios to (c).';
}

$haveDeadbolt = class_exists(Deadbolt\LockFactory::class);
if ($haveDeadbolt) {
    $libraries[] = 'deadbolt ' . phpversion('deadbolt');
} else {
    $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured, rows (e) to (g) are missing.'
        . ' Load it with -d extension=target/release/libdeadbolt.so';
}

// ---------------------------------------------------------------------------------------------------------------
// Variants: each a closure running N cycles and returning the number of failed acquires (0 on a quiet private server:
// a name is released before it comes round again).

$variants = [];
$labels = [];

/** The same three calls for every LockFactory, symfony/lock's or Deadbolt's. */
$factoryCycle = static function (object $factory, array $names): Closure {
    $count = count($names);

    return static function (int $n) use ($factory, $names, $count): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $lock = $factory->createLock($names[$i % $count], 30);
            if ($lock->acquire(false)) {
                $lock->release();
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
};

if ($phpredis !== null) {
    $names = $namesFor('a');
    $labels['a'] = '(a) phpredis SET NX PX + DEL';
    $variants['a'] = static function (int $n) use ($phpredis, $names, $nameCount): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $key = $names[$i % $nameCount];
            if ($phpredis->set($key, bin2hex(random_bytes(16)), ['NX', 'PX' => 30000]) === true) {
                $phpredis->del($key);
            } else {
                ++$failed;
            }
        }

        return $failed;
    };

    $names = $namesFor('b');
    $labels['b'] = '(b) SET NX PX + Lua CAS-delete';
    $compareAndDelete = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end return 0';
    $variants['b'] = static function (int $n) use ($phpredis, $names, $nameCount, $compareAndDelete): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $key = $names[$i % $nameCount];
            $token = bin2hex(random_bytes(16));
            if ($phpredis->set($key, $token, ['NX', 'PX' => 30000]) === true) {
                if ($phpredis->eval($compareAndDelete, [$key, $token], 1) !== 1) {
                    throw new RuntimeException("(b): compare-and-delete did not delete $key");
                }
            } else {
                ++$failed;
            }
        }

        return $failed;
    };

    if ($haveSymfony) {
        $labels['c'] = '(c) symfony/lock + phpredis';
        $variants['c'] = $factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($phpredis)),
            $namesFor('c'),
        );
    }
}
if ($predis !== null && $haveSymfony) {
    $labels['d'] = '(d) symfony/lock + Predis';
    $variants['d'] = $factoryCycle(
        new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($predis)),
        $namesFor('d'),
    );
}
if ($haveDeadbolt) {
    $dsn = sprintf('redis://%s:%d', HOST, $port);
    $labels['e'] = '(e) Deadbolt by DSN';
    $variants['e'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn)), $namesFor('e'));
    if ($phpredis !== null) {
        $labels['f'] = '(f) Deadbolt + phpredis';
        $variants['f'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($phpredis)), $namesFor('f'));
    }
    if ($predis !== null) {
        $labels['g'] = '(g) Deadbolt + Predis';
        $variants['g'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($predis)), $namesFor('g'));
    }
}

// Reference, through phpredis: the smallest pair of scripts that can keep symfony/lock's data model (SYMFONY-COMPAT.md
// 4) on a free key. Acquire: TYPE (free, a sorted set, or another type?), TIME (scores are server milliseconds), ZADD
// of the token and __write__, PEXPIREAT; release: ZSCORE (mine?) and ZREM. No waiters, no hand-over, no wrong-type
// handling. It shows what any script-based lock on this model costs in Redis beside the SET/DEL floor (a).
if ($phpredis !== null) {
    $names = $namesFor('s');
    $labels['s'] = '(s) reference: minimal scripts';
    $smallestSave = 'if redis.call("TYPE", KEYS[1]).ok ~= "none" then return 0 end '
        . 'local t = redis.call("TIME") local e = t[1] * 1000 + math.floor(t[2] / 1000) + tonumber(ARGV[2]) '
        . 'redis.call("ZADD", KEYS[1], e, ARGV[1], e, "__write__") redis.call("PEXPIREAT", KEYS[1], e) return 1';
    $smallestDelete = 'if not redis.call("ZSCORE", KEYS[1], ARGV[1]) then return 0 end '
        . 'redis.call("ZREM", KEYS[1], ARGV[1], "__write__") return 1';
    $saveSha = $phpredis->script('load', $smallestSave);
    $deleteSha = $phpredis->script('load', $smallestDelete);
    $variants['s'] = static function (int $n) use ($phpredis, $names, $nameCount, $saveSha, $deleteSha): int {
        $failed = 0;
        for ($i = 0; $i < $n; ++$i) {
            $key = $names[$i % $nameCount];
            $token = base64_encode(random_bytes(32));
            if ($phpredis->evalSha($saveSha, [$key, $token, '30000'], 1) === 1) {
                $phpredis->evalSha($deleteSha, [$key, $token], 1);
            } else {
                ++$failed;
            }
        }

        return $failed;
    };
}

// Not a lock: one bare round trip through phpredis, to read the other rows against (a cycle of (a) is two of them).
if ($phpredis !== null) {
    $labels['r'] = '(r) reference: phpredis PING';
    $variants['r'] = static function (int $n) use ($phpredis): int {
        for ($i = 0; $i < $n; ++$i) {
            $phpredis->ping();
        }

        return 0;
    };
}

// ---------------------------------------------------------------------------------------------------------------
// Warm-up, timed rounds, then the counting passes

$broken = [];
$failures = array_fill_keys(array_keys($variants), 0);
/** Runs $n cycles of $letter; a variant that throws is dropped (with a note) rather than ending the benchmark. */
$run = static function (string $letter, int $n) use (&$variants, &$broken, &$failures): bool {
    try {
        $failures[$letter] += $variants[$letter]($n);

        return true;
    } catch (Throwable $e) {
        $broken[$letter] = describe($e);
        unset($variants[$letter]);

        return false;
    }
};

// The result arrays get their final size now, so that filling them does not show in the memory lines of (e).
$slices = (int) ceil($cycles / SLICE);
$samples = $cpuSamples = $sliceUs = [];
foreach (array_keys($variants) as $letter) {
    $samples[$letter] = array_fill(0, $rounds, 0.0);
    $cpuSamples[$letter] = array_fill(0, $rounds, 0.0);
    $sliceUs[$letter] = array_fill(0, $rounds * $slices, 0.0);
}

$memory = [];
foreach (array_keys($variants) as $letter) {
    if ($letter === 'e') {
        gc_collect_cycles();
        $memory['before'] = [memory_get_usage(), vmRssKib()];
    }
    $run($letter, $warmup);
}

/*
 * A round runs every variant for `cycles` cycles, in slices of SLICE cycles taken in turn (the order rotating from
 * slice to slice and round to round): the loopback round trip on a VM can switch between two speeds for seconds at a
 * time (see bench/README.md), and fine interleaving makes every variant see the same mixture.
 */
for ($round = 0; $round < $rounds; ++$round) {
    $wall = $cpu = array_fill_keys(array_keys($variants), 0.0);
    for ($slice = 0; $slice < $slices; ++$slice) {
        $n = min(SLICE, $cycles - $slice * SLICE);
        $order = array_keys($variants);
        $shift = count($order) === 0 ? 0 : ($round + $slice) % count($order);
        foreach (array_merge(array_slice($order, $shift), array_slice($order, 0, $shift)) as $letter) {
            $c0 = cpuUs();
            $t0 = hrtime(true);
            if ($run($letter, $n)) {
                $elapsed = (hrtime(true) - $t0) / 1e3;
                $wall[$letter] += $elapsed;
                $cpu[$letter] += cpuUs() - $c0;
                $sliceUs[$letter][$round * $slices + $slice] = $elapsed / $n;
            }
        }
    }
    foreach (array_keys($variants) as $letter) {
        $samples[$letter][$round] = $wall[$letter] / $cycles;
        $cpuSamples[$letter][$round] = $cpu[$letter] / $cycles;
    }
}
foreach (array_keys($broken) as $letter) {
    unset($samples[$letter], $cpuSamples[$letter], $sliceUs[$letter]);
}
if (isset($variants['e'])) {
    gc_collect_cycles();
    $memory['after'] = [memory_get_usage(), vmRssKib()];
}

/*
 * Commands Redis executed per cycle: CONFIG RESETSTAT, N cycles, INFO commandstats. Redis 7 counts the commands a
 * script calls (redis.call) under their own names too. Left out: what the measuring connection itself sends (INFO,
 * CONFIG); a client's one-off CONFIG GET on its first connection happened during the warm-up.
 */
$commands = [];
$serverUs = [];
$countingFailed = null;
foreach (array_keys($variants) as $letter) {
    try {
        $meter->call('CONFIG', 'RESETSTAT');
    } catch (RuntimeException $e) {
        $countingFailed = 'CONFIG RESETSTAT was refused (' . $e->getMessage() . '): no command counts.';
        break;
    }
    if (!$run($letter, $cycles)) {
        continue;
    }
    $stats = array_filter(
        commandStats($meter),
        static fn (string $name): bool => $name !== 'info' && !str_starts_with($name, 'config'),
        ARRAY_FILTER_USE_KEY,
    );
    uasort($stats, static fn (array $x, array $y): int => $y[0] <=> $x[0]);
    $commands[$letter] = array_map(static fn (array $s): float => $s[0] / $cycles, $stats);
    $serverUs[$letter] = array_map(static fn (array $s): float => $s[1] / $cycles, $stats);
}
if ($countingFailed !== null) {
    $notes[] = $countingFailed;
}

/*
 * What the client sent per cycle (= round trips, each command waits for its reply): a pass under MONITOR. MONITOR
 * shows the commands a script calls as coming from "lua"; those are left out here. A sentinel ECHO from the measuring
 * connection marks the end of the pass in the stream.
 */
$sent = [];
$monitorFailed = null;
foreach (array_keys($variants) as $letter) {
    try {
        $monitor = new Resp(HOST, $port);
        if ($monitor->call('MONITOR') !== 'OK') {
            throw new RuntimeException('MONITOR did not answer OK');
        }
    } catch (RuntimeException $e) {
        $monitorFailed = 'MONITOR is not available (' . $e->getMessage() . '): no round-trip counts.';
        break;
    }
    $ok = $run($letter, $monitorCycles);
    $sentinel = 'deadbolt-bench-sentinel-' . bin2hex(random_bytes(4));
    $meter->call('ECHO', $sentinel);
    $self = $meter->localAddress();
    $counts = [];
    while (true) {
        $line = $monitor->readLine();
        if (str_contains($line, $sentinel) && str_contains($line, $self)) {
            break;
        }
        if (preg_match('/^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"(?: "([^"]*)")?/', $line, $m) !== 1 || $m[1] === 'lua'
            || $m[1] === $self) {
            continue;
        }
        $name = strtolower($m[2]);
        if (in_array($name, ['script', 'config', 'client', 'function'], true) && isset($m[3])) {
            $name .= '|' . strtolower($m[3]);
        }
        $counts[$name] = ($counts[$name] ?? 0) + 1;
    }
    $monitor->close();
    if ($ok) {
        arsort($counts);
        $sent[$letter] = array_map(static fn (int $calls): float => $calls / $monitorCycles, $counts);
    }
}
if ($monitorFailed !== null) {
    $notes[] = $monitorFailed;
}

$leftOver = $cleanUp();
ksort($leftOver);

// ---------------------------------------------------------------------------------------------------------------
// Report

$medians = array_map('median', array_filter($samples));
$floorUs = $medians['a'] ?? null;
$symfonyUs = $medians['c'] ?? null;
$sum = static fn (?array $counts): string => $counts === null ? '-' : sprintf('%.2f', array_sum($counts));

printf("Redis lock cycle (create lock + acquire non-blocking + release): %d cycles x %d rounds over %d names,"
    . " warm-up %d, interleaved in slices of %d\n", $cycles, $rounds, $nameCount, $warmup, min(SLICE, $cycles));
printf("PHP %s, %s, %s\n", PHP_VERSION, php_uname('s') . ' ' . php_uname('r') . ' ' . php_uname('m'),
    extension_loaded('Zend OPcache') && ini_get('opcache.enable_cli') ? 'opcache on' : 'opcache off (CLI)');
printf("Redis %s at %s:%d; %s\n", $redisVersion, HOST, $port, implode(', ', $libraries) ?: 'no client library');
$online = @file_get_contents('/sys/devices/system/cpu/online');
printf("CPUs online: %s; this php may run on %s, redis-server (pid %s) on %s\n\n",
    $online === false ? '?' : trim($online), cpusAllowed('self') ?? '?', $redisPid ?? '?',
    ($redisPid === null ? null : cpusAllowed($redisPid)) ?? '? (not readable from here)');

$widths = [30, 8, 13, 6, 6, 7, 8, 5, 4];
row($widths, 'variant', 'µs/cycle', 'min..max', 'vs (a)', 'vs (c)', 'PHP CPU', 'Redis µs', 'cmds', 'sent');
row($widths, ...array_map(static fn (int $w): string => str_repeat('-', $w), $widths));
foreach ($labels as $letter => $label) {
    if (!isset($medians[$letter])) {
        row($widths, $label, isset($broken[$letter]) ? 'failed' : '-', '-', '-', '-', '-', '-', '-', '-');
        continue;
    }
    $us = $medians[$letter];
    // Time Redis spent executing what the client sent; a script's time includes the commands it calls.
    $redisUs = isset($sent[$letter], $serverUs[$letter])
        ? array_sum(array_intersect_key($serverUs[$letter], $sent[$letter])) : null;
    row(
        $widths,
        $label,
        sprintf('%.2f', $us),
        sprintf('%.1f..%.1f', min($samples[$letter]), max($samples[$letter])),
        $floorUs === null ? '-' : sprintf('%.2fx', $us / $floorUs),
        $symfonyUs === null ? '-' : sprintf('%.2fx', $us / $symfonyUs),
        sprintf('%.1f', median($cpuSamples[$letter])),
        $redisUs === null ? '-' : sprintf('%.1f', $redisUs),
        $sum($commands[$letter] ?? null),
        $sum($sent[$letter] ?? null),
    );
}
echo <<<LEGEND

µs/cycle: median round (wall clock); min..max: fastest and slowest round; vs (a), vs (c): µs/cycle ratios.
PHP CPU: µs of CPU (user + system) this php process used per cycle, median round. The rest of a cycle is waiting
  for Redis: its execution time plus the loopback round trips (socket wake-ups, scheduling).
Redis µs: µs per cycle Redis spent executing the commands sent (INFO commandstats usec; a script includes its calls).
cmds: commands Redis executed per cycle (INFO commandstats over a pass of $cycles cycles; the commands a script
  calls included). sent: commands the client sent per cycle = round trips (MONITOR over $monitorCycles cycles).

LEGEND;

$breakdown = static function (array $counts): string {
    return implode(', ', array_map(
        static fn (string $name, float $perCycle): string => sprintf('%s %.2f', $name, $perCycle),
        array_keys($counts),
        $counts,
    )) ?: 'none';
};
if ($commands !== []) {
    echo "\nCommands executed per cycle, by name (INFO commandstats):\n";
    foreach ($commands as $letter => $counts) {
        printf("  (%s) %s\n", $letter, $breakdown($counts));
    }
}
if ($sent !== []) {
    echo "\nCommands sent per cycle, by name (MONITOR):\n";
    foreach ($sent as $letter => $counts) {
        printf("  (%s) %s\n", $letter, $breakdown($counts));
    }
}

if (isset($memory['after'])) {
    $kib = static fn (?int $v): string => $v === null ? 'n/a' : sprintf('%d KiB', $v);
    printf("\nDeadbolt by DSN (e), memory (other variants ran in between):\n");
    printf("  before its first cycle: memory_get_usage %d B, VmRSS %s\n", $memory['before'][0], $kib($memory['before'][1]));
    printf("  after its last timed cycle: memory_get_usage %d B, VmRSS %s\n", $memory['after'][0], $kib($memory['after'][1]));
    printf("  cycles run: %d\n", $warmup + $cycles * $rounds);
}

/** The value below which a fraction $q of $values lie (nearest rank). */
$quantile = static function (array $values, float $q): float {
    sort($values);

    return $values[min(count($values) - 1, (int) floor($q * count($values)))];
};
$probe = isset($sliceUs['r']) && $sliceUs['r'] !== [] ? 'r' : (isset($sliceUs['a']) && $sliceUs['a'] !== [] ? 'a' : null);
if ($probe !== null) {
    $fast = $quantile($sliceUs[$probe], 0.1);
    $slow = $quantile($sliceUs[$probe], 0.9);
    if ($slow > 2 * $fast) {
        $notes[] = sprintf('%s took %.1f µs per call in its fastest tenth of slices and %.1f µs or more in its slowest'
            . ' tenth: the round trip switched speed during the run (typically php and redis-server sharing one CPU'
            . ' versus running on two, see bench/README.md). The ratios mix both; pin both processes to compare them'
            . ' at one speed.', $labels[$probe], $fast, $slow);
    }
}

foreach ($broken as $letter => $error) {
    $notes[] = sprintf('%s threw, its row is empty: %s', $labels[$letter], $error);
}
foreach ($failures as $letter => $count) {
    if ($count > 0) {
        $notes[] = sprintf('%s: %d acquires failed (another client using the same keys?): its time is not a clean cycle'
            . ' time.', $labels[$letter], $count);
    }
}
foreach ($leftOver as $letter => $shapes) {
    $parts = [];
    ksort($shapes);
    foreach ($shapes as $shape => [$count, $pttl]) {
        $parts[] = sprintf('%d x %s (%s)', $count, $shape,
            $pttl === -1 ? 'no expiry' : ($pttl >= 0 ? sprintf('expiring within %.0f s', $pttl / 1000) : 'gone'));
    }
    $notes[] = sprintf('%s: after its last release these keys remained (NAME = one of its %d resource names;'
        . ' deleted now): %s.%s', $labels[$letter] ?? "($letter)", $nameCount, implode(', ', $parts),
        isset($shapes['NAME']) ? ' The lock keys themselves should be gone once released.' : '');
}
foreach ($notes as $note) {
    echo "\nNOTE: ", wordwrap($note, 116, "\n      "), "\n";
}
