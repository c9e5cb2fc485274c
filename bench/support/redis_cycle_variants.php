<?php

/*
 * The variants of bench/redis.php and the client connections they share. Each variant is a closure running N lock
 * cycles on its own `names` keys, <run prefix><letter>:<n>, and returning the number of failed acquires (0 on a
 * quiet private server: a name is released before it comes round again). The phpredis rows share one \Redis
 * connection, the Predis rows one Predis\Client. A library that is missing leaves its rows out, with a note.
 */

declare(strict_types=1);

require_once __DIR__ . '/cycle_rounds.php';
require_once __DIR__ . '/environment.php';
require_once __DIR__ . '/run_keys.php';

/**
 * @return array{labels: array<string, string>, variants: array<string, Closure(int): int>, libraries: list<string>,
 *   notes: list<string>} labels and variants by letter, in table order; the client libraries found; what is missing
 */
function redisCycleVariants(int $port, ?string $socket, RunKeys $keys, int $nameCount): array
{
    /** @return list<string> the resource names (= Redis keys) of one variant */
    $namesFor = static function (string $letter) use ($keys, $nameCount): array {
        $names = [];
        for ($i = 0; $i < $nameCount; ++$i) {
            $names[] = sprintf('%s%s:%d', $keys->prefix, $letter, $i);
        }

        return $names;
    };
    /** The same three calls for every LockFactory, symfony/lock's or Deadbolt's (TTL 30 s). */
    $factoryCycle = static fn (object $factory, string $letter): Closure => factoryCycle($factory, $namesFor($letter), 30.0);

    /** The two-round-trip floor: SET NX PX, then DEL, through a phpredis connection. */
    $setDelCycle = static function (Redis $client, array $names): Closure {
        $count = count($names);

        return static function (int $n) use ($client, $names, $count): int {
            $failed = 0;
            for ($i = 0; $i < $n; ++$i) {
                $key = $names[$i % $count];
                if ($client->set($key, bin2hex(random_bytes(16)), ['NX', 'PX' => 30000]) === true) {
                    $client->del($key);
                } else {
                    ++$failed;
                }
            }

            return $failed;
        };
    };

    $notes = [];
    $libraries = [];
    $phpredis = null;
    if (extension_loaded('redis')) {
        $phpredis = new Redis();
        $phpredis->connect(REDIS_HOST, $port, 2.0);
        $libraries[] = 'phpredis ' . phpversion('redis');
    } else {
        $notes[] = 'The redis (phpredis) extension is not loaded: (a), (b), (c) and (f) are missing, and so are the'
            . ' ratios to (a) and (c).';
    }
    $predis = null;
    $predisAutoload = predisAutoload();
    if (loadLibrary($predisAutoload)) {
        $predis = new Predis\Client(['scheme' => 'tcp', 'host' => REDIS_HOST, 'port' => $port, 'timeout' => 2.0]);
        $predis->connect();
        $libraries[] = 'Predis ' . Predis\Client::VERSION;
    } else {
        $notes[] = "Predis not found at $predisAutoload (apt install php-predis, or set PREDIS_AUTOLOAD): (d) and (g)"
            . ' are missing.';
    }
    $symfonyAutoload = symfonyLockAutoload();
    $haveSymfony = loadLibrary($symfonyAutoload);
    if ($haveSymfony) {
        $libraries[] = 'symfony/lock from ' . dirname($symfonyAutoload);
    } else {
        $notes[] = "symfony/lock not found at $symfonyAutoload (apt install php-symfony-lock, or set"
            . ' SYMFONY_LOCK_AUTOLOAD): (c) and (d) are missing, and so are the ratios to (c).';
    }
    $haveDeadbolt = deadboltLoaded();
    if ($haveDeadbolt) {
        $libraries[] = 'deadbolt ' . phpversion('deadbolt');
    } else {
        $notes[] = 'The deadbolt extension is not loaded: only the anchors were measured, rows (e) to (g) are'
            . ' missing. Load it with -d extension=target/release/libdeadbolt.so';
    }

    $labels = [];
    $variants = [];
    if ($phpredis !== null) {
        $names = $namesFor('a');
        $labels['a'] = '(a) phpredis SET NX PX + DEL';
        $variants['a'] = $setDelCycle($phpredis, $names);

        $names = $namesFor('b');
        $labels['b'] = '(b) SET NX PX + Lua CAS-delete';
        $compareAndDelete = 'if redis.call("GET", KEYS[1]) == ARGV[1] then return redis.call("DEL", KEYS[1]) end'
            . ' return 0';
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
                'c',
            );
        }
    }
    if ($predis !== null && $haveSymfony) {
        $labels['d'] = '(d) symfony/lock + Predis';
        $variants['d'] = $factoryCycle(
            new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($predis)),
            'd',
        );
    }
    if ($haveDeadbolt) {
        $dsn = sprintf('redis://%s:%d', REDIS_HOST, $port);
        $labels['e'] = '(e) Deadbolt by DSN';
        $variants['e'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn)), 'e');
        $labels['h'] = '(h) Deadbolt, release=deferred';
        $variants['h'] = $factoryCycle(
            new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn . '?release=deferred')),
            'h',
        );
        // The holder records (docs/API-CONTRACT.md, "Operating locks") cost three commands a cycle: their price.
        $labels['n'] = '(n) Deadbolt, records=off';
        $variants['n'] = $factoryCycle(
            new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($dsn . '?records=off')),
            'n',
        );
        if ($phpredis !== null) {
            $labels['f'] = '(f) Deadbolt + phpredis';
            $variants['f'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($phpredis)), 'f');
        }
        if ($predis !== null) {
            $labels['g'] = '(g) Deadbolt + Predis';
            $variants['g'] = $factoryCycle(new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($predis)), 'g');
        }
        if ($socket !== null) {
            $labels['u'] = '(u) Deadbolt by unix socket';
            $variants['u'] = $factoryCycle(
                new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore('redis://' . $socket)),
                'u',
            );
            $labels['x'] = '(x) unix socket, deferred';
            $variants['x'] = $factoryCycle(
                new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore('redis://' . $socket . '?release=deferred')),
                'x',
            );
        }
    }

    // Reference, through phpredis: the smallest pair of scripts that can keep symfony/lock's data model
    // (SYMFONY-COMPAT.md 4) on a free key. Acquire: TYPE (free, a sorted set, or another type?), TIME (scores are
    // server milliseconds), ZADD of the token and __write__, PEXPIREAT; release: ZSCORE (mine?) and ZREM. No waiters,
    // no hand-over, no wrong-type handling. It shows what any script-based lock on this model costs in Redis beside
    // the SET/DEL floor (a).
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

        // Not a lock: one bare round trip, to read the other rows against (a cycle of (a) is two of them).
        $labels['r'] = '(r) reference: phpredis PING';
        $variants['r'] = static function (int $n) use ($phpredis): int {
            for ($i = 0; $i < $n; ++$i) {
                $phpredis->ping();
            }

            return 0;
        };
    }
    // The same floor and round trip over the server's unix socket, to read (u) against.
    if ($phpredis !== null && $socket !== null) {
        $overSocket = new Redis();
        $overSocket->connect($socket);
        $names = $namesFor('v');
        $labels['v'] = '(v) SET NX+DEL, unix socket';
        $variants['v'] = $setDelCycle($overSocket, $names);
        $labels['w'] = '(w) PING, unix socket';
        $variants['w'] = static function (int $n) use ($overSocket): int {
            for ($i = 0; $i < $n; ++$i) {
                $overSocket->ping();
            }

            return 0;
        };
    }

    return ['labels' => $labels, 'variants' => $variants, 'libraries' => $libraries, 'notes' => $notes];
}

/**
 * Deletes the keys of the run, grouped by the variant whose names they derive from.
 *
 * @return array<string, array<string, array{int, int}>> letter => key shape (the resource name replaced by NAME) =>
 *   [how many, PTTL of one of them in ms], letters in order
 */
function deleteRedisCycleKeys(Resp $meter, RunKeys $keys): array
{
    $found = [];
    foreach ($keys->find($meter) as $key) {
        if (preg_match('/' . preg_quote($keys->prefix, '/') . '([a-z]+):\d+/', $key, $m, PREG_OFFSET_CAPTURE) === 1) {
            $shape = substr_replace($key, 'NAME', $m[0][1], strlen($m[0][0]));
            $found[$m[1][0]][$shape][] = $key;
        }
    }
    $left = [];
    foreach ($found as $letter => $shapes) {
        foreach ($shapes as $shape => $shapeKeys) {
            $left[$letter][$shape] = [count($shapeKeys), (int) $meter->call('PTTL', $shapeKeys[0])];
            $meter->delete($shapeKeys);
        }
    }
    ksort($left);

    return $left;
}
