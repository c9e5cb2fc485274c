<?php

/*
 * The child side of ArgumentFuzzTest: one batch of random calls, run in a fresh php process.
 *
 *   php -d extension=... fuzz_child.php SEED COUNT REDIS_PORT LOCK_DIR STRICT(0|1) ERROR_LOG
 *
 * Prints "C <i> <description>" before each call and "R <i> <outcome>" after it (flushed), then "DONE <n>".
 * Outcomes: "OK", "THROW <class>: <message>", "UNEXPECTED ..." never (the parent classifies).
 * A call that may block without deadline is made bounded first (see makeBounded()), so a batch always ends.
 * This file has no strict_types: the calls themselves go through fz_invoke() of the strict or the coercive shim.
 */

[$script, $seed, $count, $port, $lockDir, $strict, $errorLog] = $argv;
$seed = (int) $seed;
$count = (int) $count;
$port = (int) $port;
require __DIR__.('1' === $strict ? '/fuzz_shim_strict.php' : '/fuzz_shim_coercive.php');
ini_set('error_log', $errorLog);
// Relative lock paths the fuzzer makes up ("app:1", "flock:", "res0"...) are created under the batch's own directory.
if (!is_dir($lockDir) && !mkdir($lockDir, 0777, true)) {
    exit(2);
}
chdir($lockDir);
$GLOBALS['fz_lock_dir'] = $lockDir;
mt_srand($seed);

$notices = [];
set_error_handler(static function (int $no, string $str) use (&$notices): bool {
    $notices[] = $no.':'.substr($str, 0, 120);

    return true;
});

function fz_rand_float(): float
{
    return [0.0, -0.0, 0.001, 0.05, 1.0, 1.5, 30.0, 300.0, -1.0, -0.5, NAN, INF, -INF, 1e308, -1e308, PHP_FLOAT_EPSILON,
        PHP_FLOAT_MIN, 9.2233720368547758E+18, 1e-320][mt_rand(0, 18)];
}

function fz_rand_int(): int
{
    return [0, 1, -1, 2, 7, 100, 300, 1024, 1025, PHP_INT_MAX, PHP_INT_MIN, 65535, 65536, -65536][mt_rand(0, 13)];
}

function fz_rand_string(int $port): string
{
    static $mega = null;
    $mega ??= str_repeat("\xff\0ab", 262144); // 1 MB, binary
    $r = mt_rand(0, 29);

    return match ($r) {
        0 => '',
        1 => "\0",
        2 => '__write__',
        3 => $mega,
        4 => random_bytes(mt_rand(1, 64)),
        5 => 'res'.mt_rand(0, 4),
        6 => 'flock',
        7 => 'in-memory',
        8 => 'flock://'.$GLOBALS['fz_lock_dir'].'/sub/'.mt_rand(0, 9),
        9 => 'flock://relative/path',
        10 => "redis://127.0.0.1:$port",
        11 => "redis://127.0.0.1:$port/".mt_rand(0, 20),
        12 => "redis://127.0.0.1:$port?timeout=".['abc', '-1', 'NAN', 'INF', '0', '1e400', ''][mt_rand(0, 6)],
        13 => "redis://127.0.0.1:$port?read_timeout=0.2&db=".['x', '-1', '99999', '3'][mt_rand(0, 3)],
        14 => "redis://u:p%ZZ@127.0.0.1:$port",
        15 => 'redis://127.0.0.1:1?timeout=0.2',
        16 => 'redis://127.0.0.1:99999',
        17 => 'redis:///nonexistent/redis.sock?db=2&timeout=0.2',
        18 => "rediss://127.0.0.1:$port?ca_file=/nonexistent.pem&timeout=0.2",
        19 => "redis://127.0.0.1:$port?password_env=DEADBOLT_FUZZ_UNSET&timeout=0.2",
        20 => "redis://[::1:$port",
        21 => "redis://\0@127.0.0.1:$port",
        22 => 'redis://'.str_repeat('a', 300).':'.$port.'?timeout=0.2',
        23 => "redis://127.0.0.1:$port?".str_repeat('x=1&', 50),
        24 => 'memcached://127.0.0.1:11211',
        25 => str_repeat('é', mt_rand(1, 40)),
        26 => (string) mt_rand(),
        27 => "redis://127.0.0.1:$port?timeout=0.2&bogus=\xff",
        28 => 'redis://@127.0.0.1:'.$port.'?timeout=0.2',
        default => 'app:'.mt_rand(0, 3),
    };
}

/**
 * A random value of any type; $pool supplies live Deadbolt objects and \Redis objects.
 */
function fz_rand_value(array &$pool, int $port, int $depth = 0): mixed
{
    $r = mt_rand(0, 21);
    switch ($r) {
        case 0: return null;
        case 1: return (bool) mt_rand(0, 1);
        case 2: case 3: return fz_rand_int();
        case 4: case 5: return fz_rand_float();
        case 6: case 7: case 8: return fz_rand_string($port);
        case 9:
            if ($depth > 2) {
                return [];
            }
            $a = [];
            for ($i = mt_rand(0, 3); $i > 0; --$i) {
                $a[mt_rand(0, 1) ? fz_rand_string($port) : mt_rand(-2, 5)] = fz_rand_value($pool, $port, $depth + 1);
            }
            return $a;
        case 10: return ['resource' => fz_rand_string($port), 'token' => fz_rand_string($port)];
        case 11: return [[['deep' => [[[]]]]]];
        case 12: return new stdClass();
        case 13: return static fn () => 42;
        case 14: return new ArrayObject([1, 2]);
        case 15: return fz_logger((bool) mt_rand(0, 1));
        case 16:
            $r = new Redis();
            if (mt_rand(0, 3) > 0) {
                try {
                    $r->connect('127.0.0.1', $port, 1.0);
                } catch (Throwable) {
                }
            }
            return $r;
        default:
            $keys = array_keys($pool);
            if ([] === $keys) {
                return null;
            }
            $bucket = $pool[$keys[mt_rand(0, count($keys) - 1)]];
            return [] === $bucket ? null : $bucket[mt_rand(0, count($bucket) - 1)];
    }
}

function fz_logger(bool $throws): object
{
    return $throws
        ? new class() {
            public function log($level, $message, array $context = []): void
            {
                throw new RuntimeException('fuzz logger boom');
            }
        }
        : new class() {
            public int $n = 0;
            public function log($level, $message, array $context = []): void
            {
                ++$this->n;
            }
        };
}

/** A value that fits the declared parameter type (most of the time), else anything. */
function fz_value_for(?ReflectionType $type, string $name, array &$pool, int $port): mixed
{
    if (mt_rand(0, 99) < 35 || null === $type) {
        return fz_rand_value($pool, $port);
    }
    $names = $type instanceof ReflectionNamedType ? [$type->getName()] : array_map(static fn ($t) => (string) $t, $type instanceof ReflectionUnionType ? $type->getTypes() : []);
    $pick = $names[mt_rand(0, max(0, count($names) - 1))] ?? 'mixed';
    if ($type->allowsNull() && 0 === mt_rand(0, 5)) {
        return null;
    }
    return match (ltrim($pick, '?\\')) {
        'string' => fz_rand_string($port),
        'float' => fz_rand_float(),
        'int' => fz_rand_int(),
        'bool' => (bool) mt_rand(0, 1),
        'array' => ['resource' => fz_rand_string($port), 'token' => fz_rand_string($port)],
        'Deadbolt\\Key' => fz_pick($pool, Deadbolt\Key::class) ?? new Deadbolt\Key(fz_rand_string($port)),
        'object' => 'logger' === $name ? fz_logger(0 === mt_rand(0, 5)) : (fz_pick_store($pool) ?? fz_rand_value($pool, $port)),
        'mixed' => 'connection' === $name ? (mt_rand(0, 1) ? fz_rand_string($port) : fz_rand_value($pool, $port)) : fz_rand_value($pool, $port),
        default => fz_rand_value($pool, $port),
    };
}

function fz_pick(array $pool, string $class): ?object
{
    $bucket = $pool[$class] ?? [];

    return [] === $bucket ? null : $bucket[mt_rand(0, count($bucket) - 1)];
}

function fz_pick_store(array $pool): ?object
{
    $stores = [];
    foreach ([Deadbolt\Store\FlockStore::class, Deadbolt\Store\InMemoryStore::class, Deadbolt\Store\RedisStore::class] as $c) {
        foreach ($pool[$c] ?? [] as $s) {
            $stores[] = $s;
        }
    }

    return [] === $stores ? null : $stores[mt_rand(0, count($stores) - 1)];
}

function fz_describe(mixed $v): string
{
    if (is_string($v)) {
        return strlen($v) > 40 ? 'string('.strlen($v).')"'.addcslashes(substr($v, 0, 20), "\0..\37\177..\377").'..."' : '"'.addcslashes($v, "\0..\37\177..\377").'"';
    }
    if (is_float($v)) {
        return is_nan($v) ? 'NAN' : (is_infinite($v) ? ($v > 0 ? 'INF' : '-INF') : (0.0 === $v && fdiv(1.0, $v) < 0 ? '-0.0' : var_export($v, true)));
    }
    if (is_object($v)) {
        return $v instanceof Closure ? 'Closure' : str_replace("\0", '\\0', get_class($v)).'#'.spl_object_id($v);
    }
    if (is_array($v)) {
        $parts = [];
        foreach (array_slice($v, 0, 4, true) as $k => $x) {
            $parts[] = fz_describe($k).'=>'.fz_describe($x);
        }
        return '['.implode(',', $parts).(count($v) > 4 ? ',...' : '').']';
    }
    return var_export($v, true);
}

$port = $port;
$lockDir = $lockDir;
$redisAdmin = new Redis();
$redisAdmin->connect('127.0.0.1', $port, 5.0);

// The pool of live objects, by class. Nothing is ever dropped from it (a dropped Key or Lock could orphan a lock that a
// later waitAndSave would then wait for), except that the process exit destroys everything at the end.
$pool = [];
$add = static function (mixed $v) use (&$pool): void {
    if (is_object($v) && (str_starts_with(get_class($v), 'Deadbolt\\') || $v instanceof Redis)) {
        $pool[get_class($v)][] = $v;
    }
};
$add(new Deadbolt\Store\FlockStore($lockDir));
$add(new Deadbolt\Store\InMemoryStore());
$add(new Deadbolt\Store\RedisStore("redis://127.0.0.1:$port"));
$phpRedis = new Redis();
$phpRedis->connect('127.0.0.1', $port, 5.0);
$add(new Deadbolt\Store\RedisStore($phpRedis));
$add($phpRedis);
$add(new Deadbolt\Key('res0'));

$ext = new ReflectionExtension('deadbolt');
$classes = [];
foreach ($ext->getClasses() as $class) {
    $methods = [];
    foreach ($class->getMethods(ReflectionMethod::IS_PUBLIC) as $m) {
        $methods[] = $m;
    }
    $classes[$class->getName()] = [$class, $methods];
}
$classNames = array_keys($classes);
$unserializedOnce = false;

/** Clears every lock the batch may hold, so that a wait without deadline cannot wait forever. */
$clearTheWay = static function () use (&$pool, $redisAdmin): void {
    foreach ($pool[Deadbolt\Lock::class] ?? [] as $lock) {
        try {
            $lock->release();
        } catch (Throwable) {
        }
    }
    foreach ($pool as $class => $objects) {
        if (!str_starts_with($class, 'Deadbolt\\Store\\')) {
            continue;
        }
        foreach ($objects as $store) {
            foreach ($pool[Deadbolt\Key::class] ?? [] as $key) {
                try {
                    $store->delete($key);
                } catch (Throwable) {
                }
            }
        }
    }
    $redisAdmin->flushAll();
};

$out = static function (string $line): void {
    fwrite(STDOUT, $line."\n");
    fflush(STDOUT);
};

for ($i = 0; $i < $count; ++$i) {
    $notices = [];
    $op = mt_rand(0, 99);
    $desc = '';
    $thunk = null;
    if ($op < 60) {
        // A method, a constructor or a static method of a Deadbolt class, with random arguments and arity.
        [$class, $methods] = $classes[$classNames[mt_rand(0, count($classNames) - 1)]];
        if ([] === $methods) {
            continue;
        }
        $method = $methods[mt_rand(0, count($methods) - 1)];
        $params = $method->getParameters();
        $arity = match (mt_rand(0, 9)) {
            0 => 0,
            1 => max(0, $method->getNumberOfRequiredParameters() - 1),
            2 => count($params) + mt_rand(1, 3),
            default => mt_rand($method->getNumberOfRequiredParameters(), count($params)),
        };
        $args = [];
        for ($a = 0; $a < $arity; ++$a) {
            $args[] = isset($params[$a]) ? fz_value_for($params[$a]->getType(), $params[$a]->getName(), $pool, $port) : fz_rand_value($pool, $port);
        }
        if (0 === mt_rand(0, 6) && [] !== $params) {
            // Named arguments: shuffled real names, sometimes a bogus or a duplicate one.
            $named = [];
            foreach ($params as $a => $p) {
                if (mt_rand(0, 2) > 0) {
                    $named[$p->getName()] = fz_value_for($p->getType(), $p->getName(), $pool, $port);
                }
            }
            if (0 === mt_rand(0, 3)) {
                $named['bogus'] = 1;
            }
            $args = 0 === mt_rand(0, 3) ? array_merge(array_slice($args, 0, 1), $named) : $named;
        }
        $name = $method->getName();
        $cn = $class->getName();
        // Waits without a deadline are made bounded: a timeout on Lock::acquire*, a cleared store before waitAndSave*.
        if (Deadbolt\Lock::class === $cn && in_array($name, ['acquire', 'acquireRead'], true)) {
            $blocking = $args['blocking'] ?? $args[0] ?? false;
            $timeout = array_key_exists('timeout', $args) ? $args['timeout'] : ($args[1] ?? null);
            if ((is_scalar($blocking) && $blocking) && (null === $timeout || !is_scalar($timeout) || (is_numeric($timeout) && !((float) $timeout >= 0.0 && (float) $timeout <= 0.2)))) {
                if (array_key_exists('timeout', $args) || !array_is_list($args)) {
                    $args['timeout'] = 0.05;
                } else {
                    $args[1] = 0.05;
                }
            }
        }
        $needsClear = in_array($name, ['waitAndSave', 'waitAndSaveRead'], true);
        if ($name === '__construct' || $method->isStatic()) {
            if ($name === '__construct' && 0 === mt_rand(0, 2) && [] !== ($pool[$cn] ?? [])) {
                // __construct called again on a live object.
                $target = fz_pick($pool, $cn);
                $desc = "$cn#".spl_object_id($target)."->__construct(";
                $thunk = static fn () => fz_invoke([$target, '__construct'], $args);
            } elseif ($name === '__construct') {
                $desc = "new $cn(";
                $thunk = static function () use ($cn, $args, $add) {
                    $add($o = fz_new($cn, $args));
                    return $o;
                };
            } else {
                $desc = "$cn::$name(";
                $thunk = static fn () => fz_invoke([$cn, $name], $args);
            }
        } else {
            $target = fz_pick($pool, $cn);
            if (null === $target) {
                --$i;
                continue;
            }
            if ($needsClear && $target instanceof Deadbolt\Store\InMemoryStore && $unserializedOnce) {
                // A Key given a new token may have left its old lock in this store: wait in a fresh store.
                $target = new Deadbolt\Store\InMemoryStore();
                $add($target);
            }
            $desc = "$cn#".spl_object_id($target)."->$name(";
            $thunk = static function () use ($target, $name, $args, $add) {
                $r = fz_invoke([$target, $name], $args);
                $add($r);
                return $r;
            };
        }
        $parts = [];
        foreach ($args as $k => $v) {
            $parts[] = (is_string($k) ? "$k: " : '').fz_describe($v);
        }
        $desc .= implode(', ', $parts).')';
        if ($needsClear) {
            $desc = '[cleared] '.$desc;
            $clearTheWay();
        }
        if ('__unserialize' === $name) {
            $unserializedOnce = true;
        }
    } else {
        // An engine operation on a live object.
        $keys = array_keys($pool);
        $cls = $keys[mt_rand(0, count($keys) - 1)];
        $obj = $pool[$cls][mt_rand(0, count($pool[$cls]) - 1)];
        $what = ['serialize', 'unserialize', 'clone', 'var_dump', 'print_r', 'json_encode', 'var_export', 'debug_zval_dump', 'array_cast', 'string_cast', 'compare', 'gc', 'get_object_vars', 'iterate', 'property'][mt_rand(0, 14)];
        $desc = "$what($cls#".spl_object_id($obj).')';
        $thunk = match ($what) {
            'serialize' => static fn () => serialize($obj),
            'unserialize' => static function () use ($obj, $add, &$unserializedOnce) {
                $unserializedOnce = true;
                $add($copy = unserialize(serialize($obj)));
                return $copy;
            },
            // phpredis 6.2 (Debian 13) crashes in Redis::__destruct at shutdown after `clone new \Redis()`, with or
            // without Deadbolt loaded (php -r '$r = new Redis(); $c = clone $r;' exits 139): not ours to fuzz.
            'clone' => $obj instanceof \Redis ? static fn () => null : static function () use ($obj, $add) {
                $add($copy = clone $obj);
                return $copy;
            },
            'var_dump' => static function () use ($obj) {
                ob_start();
                var_dump($obj);
                return ob_get_clean();
            },
            'print_r' => static fn () => print_r($obj, true),
            'json_encode' => static fn () => json_encode($obj),
            'var_export' => static fn () => var_export($obj, true),
            'debug_zval_dump' => static function () use ($obj) {
                ob_start();
                debug_zval_dump($obj);
                return ob_get_clean();
            },
            'array_cast' => static fn () => (array) $obj,
            'string_cast' => static fn () => (string) $obj,
            'compare' => static fn () => [$obj == fz_pick($pool, $cls), $obj <=> fz_pick($pool, $cls), $obj == new stdClass()],
            'gc' => static fn () => gc_collect_cycles(),
            'get_object_vars' => static fn () => get_object_vars($obj),
            'iterate' => static function () use ($obj) {
                $n = 0;
                foreach ($obj as $k => $v) {
                    ++$n;
                }
                return $n;
            },
            'property' => static fn () => [isset($obj->resource), $obj->resource ?? null],
        };
    }
    $out("C $i ".str_replace("\n", ' ', $desc));
    try {
        $thunk();
        $outcome = 'OK';
    } catch (Throwable $e) {
        $outcome = 'THROW '.get_class($e).': '.str_replace("\n", ' ', substr($e->getMessage(), 0, 300));
    }
    if ([] !== $notices) {
        $outcome .= ' [notices: '.str_replace("\n", ' ', implode(' | ', array_slice($notices, 0, 3))).']';
    }
    $out("R $i $outcome");
}
$out("DONE $count");
