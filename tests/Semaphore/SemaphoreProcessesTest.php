<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Semaphore;

use Deadbolt\Semaphore\SemaphoreFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Semaphores across processes on one Redis: forked workers of several weights never hold more than the limit
 * together (each checks a tally of the weight held, kept in a file under flock), and a semaphore inherited
 * through fork() stays the parent's.
 */
final class SemaphoreProcessesTest extends DeadboltTestCase
{
    public function testWorkersNeverHoldMoreThanTheLimitTogether(): void
    {
        $resource = uniqid(__METHOD__, true);
        $tally = $this->tempDir().'/tally';
        file_put_contents($tally, "0 0\n");
        $workers = [];
        foreach ([1, 2, 3, 1, 2, 1] as $weight) {
            $workers[] = $this->fork(static function (Channel $parent) use ($resource, $tally, $weight): void {
                $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
                $parent->send('ready');
                $parent->receive();
                for ($n = 0; $n < 15; ++$n) {
                    $semaphore = $factory->createSemaphore($resource, 4, $weight, 30.0);
                    if (!$semaphore->acquire(true, 60.0)) {
                        throw new \RuntimeException('a wait of 60 s for a slot ran out');
                    }
                    self::add($tally, $weight);
                    usleep(500);
                    self::add($tally, -$weight);
                    $semaphore->release();
                }
            });
        }
        foreach ($workers as $worker) {
            $this->assertSame('ready', $worker->receive());
        }
        foreach ($workers as $worker) {
            $worker->send('go');
        }
        foreach ($workers as $worker) {
            $worker->wait(300.0);
        }
        [$held, $most] = array_map('intval', explode(' ', trim((string) file_get_contents($tally))));
        $this->assertSame(0, $held);
        $this->assertGreaterThanOrEqual(3, $most, 'the workers never held slots together');
        $this->assertLessThanOrEqual(4, $most, "$most weight held at once under a limit of 4");
    }

    /** Adds $weight to the tally "held most" (under an exclusive flock of the file) and keeps the highest. */
    private static function add(string $tally, int $weight): void
    {
        $file = fopen($tally, 'r+');
        flock($file, LOCK_EX);
        [$held, $most] = array_map('intval', explode(' ', trim((string) stream_get_contents($file))));
        $held += $weight;
        $line = sprintf("%d %d\n", $held, max($most, $held));
        ftruncate($file, 0);
        rewind($file);
        fwrite($file, $line);
        fflush($file);
        flock($file, LOCK_UN);
        fclose($file);
    }

    public function testAForkedChildNeitherHoldsNorReleasesItsParentsSlot(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $semaphore = $factory->createSemaphore($resource, 1, 1, 300.0);
        $this->assertTrue($semaphore->acquire());

        $child = $this->fork(static function (Channel $parent) use ($semaphore, $factory, $resource): void {
            $parent->send($semaphore->isAcquired() ? 'held' : 'not held');
            $semaphore->release();
            $parent->send($factory->createSemaphore($resource, 1)->acquire() ? 'taken' : 'refused');
            // exit() destroys the child's copy of the semaphore (autoRelease on).
        });
        $this->assertSame('not held', $child->receive(), 'an inherited semaphore is not held in the child');
        $this->assertSame('refused', $child->receive(), 'the child\'s release() gave the parent\'s slot away');
        $child->wait();
        $this->assertTrue($semaphore->isAcquired(), 'the child\'s exit released the parent\'s slot');
        $this->assertFalse($factory->createSemaphore($resource, 1)->acquire());
    }

    /**
     * A signal handler runs during a semaphore's wait, as during a lock's: its exception ends the wait (acquire()
     * throws it), and the waiter leaves the queue, so the weight freed later goes to nobody who is gone.
     */
    public function testASignalHandlersExceptionEndsAWait(): void
    {
        $resource = uniqid(__METHOD__, true);
        $factory = new SemaphoreFactory(new RedisStore(SharedRedis::dsn()));
        $holder = $factory->createSemaphore($resource, 1, 1, 60.0);
        $this->assertTrue($holder->acquire());

        $waiter = PhpProcess::run(<<<'PHP'
            $semaphore = (new Deadbolt\Semaphore\SemaphoreFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))
                ->createSemaphore($vars['resource'], 1, 1, 60.0);
            pcntl_async_signals(true);
            pcntl_signal(SIGALRM, function () { throw new RuntimeException('stop waiting'); });
            pcntl_alarm(1);
            try {
                var_dump($semaphore->acquire(true));
            } catch (Throwable $e) {
                echo get_class($e), ': ', $e->getMessage(), "\n";
            }
            PHP, ['dsn' => SharedRedis::dsn(), 'resource' => $resource], timeout: 60.0);

        $this->assertSame(0, $waiter['exit'], $waiter['stderr']);
        $this->assertSame("RuntimeException: stop waiting\n", $waiter['stdout']);
        $this->assertSame(0, SharedRedis::client()->zCard('{'.$resource.'}#deadbolt:squeue'), 'the waiter left the queue');
        $holder->release();
        $this->assertTrue($factory->createSemaphore($resource, 1)->acquire(), 'the freed slot went to nobody who is gone');
    }
}
