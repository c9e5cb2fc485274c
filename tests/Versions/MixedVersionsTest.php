<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Versions;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A fleet that upgrades one worker at a time runs two Deadbolt versions on one Redis: processes of an earlier build
 * (DEADBOLT_PREVIOUS_SO, made by scripts/previous-build.sh), of this one, and symfony/lock's, on one lock. Each
 * version runs scripts of its own (other SHA1s), on symfony/lock's data model and one queue: a release of either
 * version hands the lock to the longest waiter of either, and no two ever hold it at once.
 *
 * scripts/test-php.sh runs this directory in a pass of its own when DEADBOLT_PREVIOUS_SO is set (make test builds the
 * earlier version); the default suite leaves it out (phpunit.xml.dist).
 */
final class MixedVersionsTest extends DeadboltTestCase
{
    /** A Deadbolt waiter: takes the lock, says so with its wake-ups, releases when told. */
    private const WAITER = <<<'PHP'
        $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn'])))->createLock($vars['resource'], 30);
        $lock->acquire(true);
        echo 'got ', Deadbolt\Metrics::snapshot()['counters']['wakeups'], "\n";
        fgets(STDIN);
        $lock->release();
        echo "released\n";
        PHP;

    /** Sections on one lock, from a common start; inside each, a Redis counter proves nobody else is inside. */
    private const WORKER = <<<'PHP'
        $redis = new Redis();
        $redis->connect('127.0.0.1', $vars['port']);
        if ($vars['symfony']) {
            require $vars['autoload'];
            $connection = new Redis();
            $connection->connect('127.0.0.1', $vars['port']);
            $factory = new Symfony\Component\Lock\LockFactory(new Symfony\Component\Lock\Store\RedisStore($connection));
        } else {
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars['dsn']));
        }
        echo "ready\n";
        fgets(STDIN);
        $overlaps = 0;
        for ($i = 0; $i < $vars['sections']; ++$i) {
            $lock = $factory->createLock($vars['resource'], 30);
            $lock->acquire(true);
            $overlaps += 1 === $redis->incr($vars['inside']) ? 0 : 1;
            usleep(200);
            $redis->decr($vars['inside']);
            $lock->release();
        }
        echo "overlaps $overlaps\n";
        PHP;

    public function testTheTwoBuildsRunScriptsOfTheirOwn(): void
    {
        $redis = SharedRedis::client();
        $redis->script('flush');
        $cycle = '$lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($vars["dsn"])))'
            .'->createLock($vars["resource"], 30); $lock->acquire(); $lock->release();';
        $vars = ['dsn' => SharedRedis::dsn(), 'resource' => uniqid('versions-', true)];

        $this->assertSame(0, PhpProcess::run($cycle, $vars, command: self::previous())['exit']);
        $previous = self::cachedScripts($redis);
        $this->assertSame(0, PhpProcess::run($cycle, $vars)['exit']);

        $this->assertSame(2, $previous, 'the earlier build loaded its acquire and release scripts');
        $this->assertSame(4, self::cachedScripts($redis), 'this build loaded two scripts of its own: two versions meet');
    }

    public function testEachVersionHandsTheLockToTheLongestWaiterOfTheOther(): void
    {
        $resource = uniqid('versions-', true);
        $vars = ['dsn' => SharedRedis::dsn(), 'resource' => $resource];
        $holder = $this->spawn(self::WAITER, $vars, self::previous());
        $this->assertSame('got 0', $holder->readLine(), 'the earlier build holds the free lock');
        $current = $this->spawn(self::WAITER, $vars);
        self::untilQueued($resource, 1);
        $previous = $this->spawn(self::WAITER, $vars, self::previous());
        self::untilQueued($resource, 2);

        $holder->writeLine('release');
        $this->assertSame('released', $holder->readLine());
        $this->assertSame('got 1', $current->readLine(), "the earlier build's release handed it to this build's waiter");
        $current->writeLine('release');
        $this->assertSame('released', $current->readLine());
        $this->assertSame('got 1', $previous->readLine(), "this build's release handed it to the earlier build's waiter");
        $previous->writeLine('release');
        $this->assertSame('released', $previous->readLine());
        foreach ([$holder, $current, $previous] as $process) {
            $this->assertSame(0, $process->waitForExit(30.0), $process->stderr());
        }
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'free after the last release');
    }

    public function testAFleetOfBothVersionsAndSymfonyLockNeverHoldsTheLockTwice(): void
    {
        $resource = uniqid('versions-', true);
        $vars = ['dsn' => SharedRedis::dsn(), 'port' => SharedRedis::port(), 'resource' => $resource,
            'inside' => "$resource:inside", 'autoload' => deadbolt_symfony_lock_autoload()];
        $workers = [];
        foreach ([self::previous(), null, self::previous(), null] as $command) {
            $workers[] = $this->spawn(self::WORKER, $vars + ['symfony' => false, 'sections' => 200], $command);
        }
        // symfony/lock polls every 100 ms or so: a few sections let it take turns without slowing the run down.
        $workers[] = $this->spawn(self::WORKER, $vars + ['symfony' => true, 'sections' => 5]);

        foreach ($workers as $worker) {
            $this->assertSame('ready', $worker->readLine(), $worker->stderr());
        }
        foreach ($workers as $worker) {
            $worker->writeLine('go');
        }
        foreach ($workers as $worker) {
            $this->assertSame('overlaps 0', $worker->readLine(120.0), $worker->stderr());
            $this->assertSame(0, $worker->waitForExit(30.0), $worker->stderr());
        }
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'free after the last release');
    }

    /** php with the earlier build's extension instead of this one. */
    private static function previous(): array
    {
        $so = getenv('DEADBOLT_PREVIOUS_SO');
        if (false === $so || !is_file($so)) {
            self::fail('DEADBOLT_PREVIOUS_SO does not name an earlier build of the extension: make test builds one'
                .' (scripts/previous-build.sh) and scripts/test-php.sh passes it to this suite.');
        }

        return [...deadbolt_php_command(false), '-d', 'extension='.$so];
    }

    /** Blocks until $count waiters are in the resource's queue (Deadbolt's companion key). */
    private static function untilQueued(string $resource, int $count): void
    {
        $redis = SharedRedis::client();
        $deadline = hrtime(true) + 30 * 1_000_000_000;
        while ($redis->zCard("$resource#deadbolt:queue{{$resource}}") < $count) {
            if (hrtime(true) > $deadline) {
                self::fail("$count waiters never queued on $resource");
            }
            usleep(2000);
        }
    }

    private static function cachedScripts(\Redis $redis): int
    {
        return (int) $redis->info('memory')['number_of_cached_scripts'];
    }
}
