<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Chaos;

/**
 * A strict fenced resource: a write is accepted only if its fencing token is greater than every token accepted
 * before; the check and the append happen under flock(2) of the resource's own lock file, so they are atomic across
 * processes. Lives in plain files, out of reach of the chaos (Redis restarts, killed clients, paused workers).
 *
 * Files in $dir: resource.lock (flock), resource.max (the highest accepted token, 20 bytes, one write(2)),
 * resource.log (one line per accepted write, in accept order: "token worker op accept_ns"),
 * resource.rejected (one line per rejected write: "token worker op decide_ns max").
 */
final class FencedResource
{
    /**
     * @return array{accepted: bool, at: int, max: int}
     */
    public static function write(string $dir, int $token, int $worker, int $op): array
    {
        $lock = fopen($dir.'/resource.lock', 'c');
        if (false === $lock || !flock($lock, LOCK_EX)) {
            throw new \RuntimeException('resource: cannot lock');
        }
        try {
            $maxFile = fopen($dir.'/resource.max', 'c+');
            $max = (int) trim((string) fread($maxFile, 64));
            $at = hrtime(true);
            if ($token > $max) {
                // The max first (one 20-byte write), then the log line: a worker killed in between leaves a max
                // the log does not show, never a log entry the max does not cover.
                rewind($maxFile);
                fwrite($maxFile, str_pad((string) $token, 20, ' ', STR_PAD_LEFT));
                fclose($maxFile);
                file_put_contents($dir.'/resource.log', "$token $worker $op $at\n", FILE_APPEND);

                return ['accepted' => true, 'at' => $at, 'max' => $max];
            }
            fclose($maxFile);
            file_put_contents($dir.'/resource.rejected', "$token $worker $op $at $max\n", FILE_APPEND);

            return ['accepted' => false, 'at' => $at, 'max' => $max];
        } finally {
            flock($lock, LOCK_UN);
            fclose($lock);
        }
    }
}
