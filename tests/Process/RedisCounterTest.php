<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\LockFactory;
use Deadbolt\Store\RedisStore;
use Deadbolt\Tests\Support\Channel;
use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * Mutual exclusion through Redis across processes, measured by its effect: no lost update on a shared counter file.
 */
final class RedisCounterTest extends DeadboltTestCase
{
    private const PROCESSES = 4;
    private const INCREMENTS = 100;

    public function testForkedProcessesNeverLoseAnIncrementMadeUnderARedisLock(): void
    {
        $dir = $this->tempDir();
        $counter = $dir.'/counter';
        file_put_contents($counter, '0');
        $resource = uniqid(__METHOD__, true);
        $dsn = SharedRedis::dsn();

        $children = [];
        for ($i = 0; $i < self::PROCESSES; ++$i) {
            $children[] = $this->fork(static function (Channel $parent) use ($dsn, $counter, $resource): void {
                $lock = (new LockFactory(new RedisStore($dsn)))->createLock($resource, 30.0);
                $parent->send('ready');
                $parent->receive();
                for ($n = 0; $n < self::INCREMENTS; ++$n) {
                    if (!$lock->acquire(true)) {
                        throw new \RuntimeException('a blocking acquire returned false');
                    }
                    // Read-modify-write through separate opens: without the lock, updates get lost.
                    $value = (int) file_get_contents($counter);
                    file_put_contents($counter, (string) ($value + 1));
                    $lock->release();
                }
            });
        }
        foreach ($children as $child) {
            $this->assertSame('ready', $child->receive());
        }
        foreach ($children as $child) {
            $child->send('go');
        }
        foreach ($children as $child) {
            $child->wait(300.0);
        }

        $this->assertSame((string) (self::PROCESSES * self::INCREMENTS), file_get_contents($counter));
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'the last release left nothing behind');
    }

    public function testFreshPhpProcessesNeverLoseAnIncrementMadeUnderARedisLock(): void
    {
        $dir = $this->tempDir();
        $counter = $dir.'/counter';
        file_put_contents($counter, '0');
        $vars = ['dsn' => SharedRedis::dsn(), 'counter' => $counter, 'resource' => uniqid(__METHOD__, true), 'increments' => self::INCREMENTS];

        $processes = [];
        for ($i = 0; $i < self::PROCESSES; ++$i) {
            $processes[] = $this->spawn(<<<'PHP'
                $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30.0);
                echo "ready\n";
                fgets(STDIN);
                for ($n = 0; $n < $vars['increments']; ++$n) {
                    $lock->acquire(true);
                    $value = (int) file_get_contents($vars['counter']);
                    file_put_contents($vars['counter'], (string) ($value + 1));
                    $lock->release();
                }
                PHP, $vars);
        }
        foreach ($processes as $process) {
            $this->assertSame('ready', $process->readLine());
        }
        foreach ($processes as $process) {
            $process->closeStdin();
        }
        foreach ($processes as $process) {
            $this->assertSame(0, $process->waitForExit(300.0), $process->stderr());
        }

        $this->assertSame((string) (self::PROCESSES * self::INCREMENTS), file_get_contents($counter));
    }
}
