<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;

/**
 * One chaos worker (its own php process): until the stop file shows, acquire(true, 2) the shared lock (TTL 0.5 s, a
 * fresh Lock each time), take its fencing token, write to the fenced resource, release. One JSON history line per
 * operation, appended and flushed as soon as the operation ends (a killed worker loses at most the one in flight).
 *
 * History fields: w worker, pid, op (sequence), ar (autoRefresh), t0 start, ta acquire returned, tw write done,
 * te end of the critical section (taken BEFORE the validity check), tr release done (hrtime ns, CLOCK_MONOTONIC),
 * token, out (accepted | rejected-stale | acquire-timeout | no-token | exception), at (resource accept/decide ns),
 * max (resource max seen), valid (at te: !isExpired() && !isLost()), expired, lost, rem (remaining lifetime at te),
 * exc / phase / msg (the exception and where it came from), rexc / rmsg (a release failure after a write).
 */
final class ChaosWorker
{
    public const TTL = 0.5;
    public const ACQUIRE_TIMEOUT = 2.0;

    /**
     * @param array{dir: string, dsn: string, resource: string, worker: int, autoRefresh: bool, stop: string} $vars
     */
    public static function run(array $vars): void
    {
        $factory = new LockFactory(new RedisStore($vars['dsn']));
        $history = fopen(sprintf('%s/history-%03d.jsonl', $vars['dir'], $vars['worker']), 'a');
        $pid = posix_getpid();
        $holding = sprintf('%s/holding-%03d', $vars['dir'], $vars['worker']);
        echo "ready $pid\n";
        $op = 0;
        while (!file_exists($vars['stop'])) {
            ++$op;
            $rec = ['w' => $vars['worker'], 'pid' => $pid, 'op' => $op, 'ar' => $vars['autoRefresh'], 't0' => hrtime(true)];
            $phase = 'createLock';
            try {
                $lock = $factory->createLock($vars['resource'], self::TTL, true, $vars['autoRefresh']);
                $phase = 'acquire';
                $acquired = $lock->acquire(true, self::ACQUIRE_TIMEOUT);
                $rec['ta'] = hrtime(true);
                if (!$acquired) {
                    $rec['out'] = 'acquire-timeout';
                } else {
                    // Tells the test which worker holds the lock, so that a SIGSTOP can land in a critical section.
                    file_put_contents($holding, '1');
                    $phase = 'getFencingToken';
                    $token = $lock->getFencingToken();
                    $rec['token'] = $token;
                    if (!\is_int($token)) {
                        $rec['out'] = 'no-token';
                    } else {
                        $phase = 'write';
                        usleep(1000); // the "work" between getting the token and using it
                        $result = FencedResource::write($vars['dir'], $token, $vars['worker'], $op);
                        $rec['tw'] = hrtime(true);
                        $rec['at'] = $result['at'];
                        $rec['max'] = $result['max'];
                        $rec['out'] = $result['accepted'] ? 'accepted' : 'rejected-stale';
                    }
                    $rec['te'] = hrtime(true);
                    file_put_contents($holding, '0');
                    $phase = 'validity';
                    $rec['expired'] = $lock->isExpired();
                    $rec['lost'] = $lock->isLost();
                    $rec['rem'] = $lock->getRemainingLifetime();
                    $rec['valid'] = !$rec['expired'] && !$rec['lost'];
                    $phase = 'release';
                    try {
                        $lock->release();
                    } catch (\Throwable $e) {
                        $rec['rexc'] = $e::class;
                        $rec['rmsg'] = $e->getMessage();
                    }
                    $rec['tr'] = hrtime(true);
                }
            } catch (\Throwable $e) {
                $rec['out'] = $rec['out'] ?? 'exception';
                $rec['exc'] = $e::class;
                $rec['phase'] = $phase;
                $rec['msg'] = $e->getMessage();
                $rec['prev'] = null !== $e->getPrevious() ? $e->getPrevious()::class.': '.$e->getPrevious()->getMessage() : null;
                $rec['tx'] = hrtime(true);
            }
            unset($lock);
            $rec['t1'] = hrtime(true);
            fwrite($history, json_encode($rec, JSON_THROW_ON_ERROR | JSON_INVALID_UTF8_SUBSTITUTE)."\n");
            fflush($history);
            if ('exception' === $rec['out']) {
                // Redis down or still loading its AOF after a restart: fail fast is right, but no need to spin.
                usleep(5000);
            }
        }
        fclose($history);
        echo "done $op\n";
    }
}
