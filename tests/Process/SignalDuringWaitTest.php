<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A worker waiting in acquire(true) must still run its pcntl signal handlers (pcntl_async_signals(true)), as a
 * Workerman-style worker needs to stop gracefully: before, the handler ran only when the wait ended, which with a
 * holder that never lets go is never. Here the holder never lets go while the waiter waits: the waiter can only come
 * back because its handler ran, threw (or exited), and the wait gave up its place.
 */
final class SignalDuringWaitTest extends DeadboltTestCase
{
    private const WAITER = <<<'PHP'
        $store = match ($vars['kind']) {
            'flock' => new Deadbolt\Store\FlockStore($vars['dir']),
            'semaphore' => new Deadbolt\Store\SemaphoreStore(),
            'redis' => new Deadbolt\Store\RedisStore('redis://127.0.0.1:'.$vars['port']),
            'phpredis' => (function () use ($vars) {
                $client = new Redis();
                $client->connect('127.0.0.1', $vars['port']);
                return new Deadbolt\Store\RedisStore($client);
            })(),
        };
        $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], 30.0);
        pcntl_async_signals(true);
        pcntl_signal(SIGALRM, function () use ($vars) {
            echo "handler\n";
            if ('exit' === $vars['handler']) {
                exit(7);
            }
            throw new RuntimeException('stop waiting');
        });
        register_shutdown_function(function () { echo "shutdown\n"; });
        pcntl_alarm(1);
        try {
            var_dump($lock->acquire(true));
        } catch (Throwable $e) {
            echo get_class($e), ': ', $e->getMessage(), "\n";
        }
        PHP;

    /**
     * @return iterable<string, array{string, string}>
     */
    public static function waits(): iterable
    {
        foreach (['flock', 'semaphore', 'redis', 'phpredis'] as $kind) {
            yield "$kind, the handler throws" => [$kind, 'throw'];
            yield "$kind, the handler exits" => [$kind, 'exit'];
        }
    }

    /**
     * @dataProvider waits
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('waits')]
    public function testASignalHandlerRunsDuringAWaitAndEndsIt(string $kind, string $handler): void
    {
        $vars = ['kind' => $kind, 'dir' => $this->tempDir(), 'port' => SharedRedis::port(), 'resource' => uniqid('signal-', true)];
        $holder = $this->holder($vars);

        $waiter = PhpProcess::run(self::WAITER, $vars + ['handler' => $handler], timeout: 60.0);

        if ('exit' === $handler) {
            $this->assertSame(7, $waiter['exit'], 'the exit() of the handler ends the script; stderr: '.$waiter['stderr']);
            $this->assertSame("handler\nshutdown\n", $waiter['stdout']);
        } else {
            $this->assertSame(0, $waiter['exit'], 'stderr: '.$waiter['stderr']);
            $this->assertSame("handler\nRuntimeException: stop waiting\nshutdown\n", $waiter['stdout'], 'the handler\'s own exception');
        }
        $this->releaseAndTakeNext($holder, $vars);
    }

    /**
     * @return iterable<string, array{string}>
     */
    public static function stores(): iterable
    {
        yield 'flock' => ['flock'];
        yield 'semaphore' => ['semaphore'];
        yield 'redis' => ['redis'];
    }

    /**
     * `max_execution_time` is an interrupt too. On Linux PHP counts it in CPU time (ITIMER_PROF), which a wait
     * hardly uses, so the test fires PHP's own timer signal (SIGPROF) at the waiter while it waits, as the kernel
     * does when the time is up: the wait must end in PHP's fatal error at its next pause (exit 255) instead of
     * waiting on for a holder that never lets go, and leave the queue, so the next caller takes the lock at once.
     *
     * @dataProvider stores
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('stores')]
    public function testTheTimeLimitEndsAWait(string $kind): void
    {
        $vars = ['kind' => $kind, 'dir' => $this->tempDir(), 'port' => SharedRedis::port(), 'resource' => uniqid('time-limit-', true)];
        $holder = $this->holder($vars);

        $waiter = $this->spawn(self::WAITER_STORE.<<<'PHP'
            set_time_limit(3600);
            echo getmypid(), "\n";
            $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], 30.0);
            $lock->acquire(true);
            echo "acquired\n";
            PHP, $vars);
        $pid = (int) $waiter->readLine();
        self::waitUntilSleeping($pid);
        usleep(50_000);
        posix_kill($pid, SIGPROF);

        $this->assertSame(255, $waiter->waitForExit(60.0), 'stderr: '.$waiter->stderr());
        $this->assertStringContainsString('Maximum execution time of 3600 seconds exceeded', $waiter->stdout().$waiter->stderr());
        $this->assertStringNotContainsString('acquired', $waiter->stdout());
        $this->releaseAndTakeNext($holder, $vars);
    }

    /**
     * A process that holds the lock (longer than a waiter's whole run may take: a waiter never comes back because
     * the lock expired) until told to release it.
     *
     * @param array<string, mixed> $vars
     */
    private function holder(array $vars): PhpProcess
    {
        $holder = $this->spawn(self::WAITER_STORE.<<<'PHP'
            $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], 300.0);
            echo $lock->acquire() ? "held\n" : "refused\n";
            fgets(STDIN);
            $lock->release();
            echo "released\n";
            PHP, $vars);
        $this->assertSame('held', $holder->readLine());

        return $holder;
    }

    /**
     * The holder lets go; the waiter left the queue, so the next caller takes the lock at once (no hand-over went to
     * the waiter that is gone).
     *
     * @param array<string, mixed> $vars
     */
    private function releaseAndTakeNext(PhpProcess $holder, array $vars): void
    {
        $holder->writeLine('release');
        $this->assertSame('released', $holder->readLine());
        $this->assertSame(0, $holder->waitForExit());
        $next = PhpProcess::run(self::WAITER_STORE.<<<'PHP'
            $lock = (new Deadbolt\LockFactory($store))->createLock($vars['resource'], 30.0);
            echo $lock->acquire() ? 'acquired' : 'refused';
            PHP, $vars);
        $this->assertSame('acquired', $next['stdout'], 'stderr: '.$next['stderr']);
    }

    private const WAITER_STORE = <<<'PHP'
        $store = match ($vars['kind']) {
            'flock' => new Deadbolt\Store\FlockStore($vars['dir']),
            'semaphore' => new Deadbolt\Store\SemaphoreStore(),
            default => new Deadbolt\Store\RedisStore('redis://127.0.0.1:'.$vars['port']),
        };
        PHP;
}
