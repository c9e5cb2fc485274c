<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;

/**
 * One process of the failover run, driven line by line on stdin, one store for its whole life (a failover must be
 * followed by the objects made before it):
 *   "acquire RESOURCE SECONDS" -> "acquired TOKEN" | "timeout" | "refused CLASS: MESSAGE"
 *   "write DIR"                -> "accepted" | "rejected"  (the fenced resource in DIR, with the held lock's token)
 *   "release"                  -> "released" | "release-failed CLASS"
 *   "quit"                     -> exits
 */
final class FailoverWorker
{
    public const TTL = 30.0;

    /**
     * @param array{dsn: string, worker: int} $vars
     */
    public static function run(array $vars): void
    {
        $factory = new LockFactory(new RedisStore($vars['dsn']));
        $lock = null;
        $token = 0;
        $op = 0;
        echo "ready\n";
        while (false !== ($line = fgets(STDIN))) {
            $words = explode(' ', trim($line));
            ++$op;
            switch ($words[0]) {
                case 'acquire':
                    $lock = $factory->createLock($words[1], self::TTL, false);
                    $t0 = hrtime(true);
                    try {
                        if ($lock->acquire(true, (float) $words[2])) {
                            $token = (int) $lock->getFencingToken();
                            echo "acquired $token\n";
                        } else {
                            echo "timeout\n";
                        }
                    } catch (\Throwable $e) {
                        $ms = (hrtime(true) - $t0) / 1e6;
                        echo 'refused ', $e::class, ': ', str_replace("\n", ' ', $e->getPrevious()?->getMessage() ?? $e->getMessage()), " (after $ms ms)\n";
                    }
                    break;
                case 'write':
                    echo FencedResource::write($words[1], $token, $vars['worker'], $op)['accepted'] ? "accepted\n" : "rejected\n";
                    break;
                case 'release':
                    try {
                        $lock?->release();
                        echo "released\n";
                    } catch (\Throwable $e) {
                        echo 'release-failed ', $e::class, "\n";
                    }
                    $lock = null;
                    break;
                case 'quit':
                    return;
            }
        }
    }
}
