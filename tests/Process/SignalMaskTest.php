<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Deadbolt's own threads (the refresher, its lanes) never take a signal meant for PHP. The kernel hands a
 * process-directed signal to any thread that does not block it: before, those threads kept the mask of the PHP
 * thread that started them, so a signal the script had blocked with pcntl_sigprocmask() was taken at once by the
 * refresher, which ran pcntl's handler outside PHP (and, in a thread-safe PHP, ended the process). Each check runs in
 * a fresh php, whose refresher starts while the script blocks nothing.
 */
final class SignalMaskTest extends DeadboltTestCase
{
    private const SCRIPT = <<<'PHP'
        // A Redis lock expires, so its autoRefresh starts the refresher (a flock lock has nothing to refresh).
        $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore('redis://127.0.0.1:'.$vars['port'])))
            ->createLock($vars['resource'], 30.0, autoRefresh: true);
        $lock->acquire() or exit(3);
        // Every thread but PHP's (the refresher started by the acquire above) blocks SIGUSR1 and SIGTERM.
        $unblocked = [];
        foreach (glob('/proc/self/task/*') as $task) {
            if ((int) basename($task) === getmypid()) {
                continue;
            }
            preg_match('/^SigBlk:\s*([0-9a-f]+)$/m', file_get_contents("$task/status"), $m);
            $mask = hexdec(substr($m[1], -8)); // signals 1-32: the low 32 bits (the whole mask is past PHP_INT_MAX)
            foreach ([SIGUSR1, SIGTERM] as $signal) {
                if (!($mask & (1 << ($signal - 1)))) {
                    $unblocked[] = trim(file_get_contents("$task/comm")).": $signal";
                }
            }
        }
        echo 'threads: ', count(glob('/proc/self/task/*')), "\n";
        echo 'unblocked: ', implode(', ', $unblocked) ?: 'none', "\n";
        // A signal the script blocks stays pending until it unblocks it: no other thread takes it meanwhile.
        $ran = 0;
        pcntl_async_signals(true);
        pcntl_signal(SIGUSR1, function () use (&$ran) { $ran++; });
        pcntl_sigprocmask(SIG_BLOCK, [SIGUSR1]);
        posix_kill(getmypid(), SIGUSR1);
        $taken = pcntl_sigtimedwait([SIGUSR1], $info, 5);
        echo 'while blocked: ', $taken === SIGUSR1 ? 'still pending' : 'taken elsewhere', ", handler ran $ran times\n";
        pcntl_sigprocmask(SIG_UNBLOCK, [SIGUSR1]);
        posix_kill(getmypid(), SIGUSR1);
        echo "unblocked: handler ran $ran times\n";
        $lock->release();
        PHP;

    public function testTheRefresherThreadsBlockSignalsAndABlockedSignalWaitsForPhp(): void
    {
        $vars = ['port' => SharedRedis::port(), 'resource' => uniqid('signal-mask-', true)];
        $run = PhpProcess::run(self::SCRIPT, $vars, timeout: 60.0);

        $this->assertSame(0, $run['exit'], 'stderr: '.$run['stderr']);
        $lines = explode("\n", trim($run['stdout']));
        $this->assertGreaterThanOrEqual(2, (int) substr($lines[0], strlen('threads: ')), 'the refresher runs: '.$run['stdout']);
        $this->assertSame(
            ['unblocked: none', 'while blocked: still pending, handler ran 0 times', 'unblocked: handler ran 1 times'],
            array_slice($lines, 1),
        );
    }
}
