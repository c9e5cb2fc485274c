<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;
use Deadbolt\Tests\Support\SharedRedis;

/**
 * A fatal error (E_USER_ERROR, memory exhausted) in PHP code that Deadbolt calls (a client's method, a logger) is
 * not an exception: the engine jumps past every Rust frame in between. Each child here ends in one; afterwards the
 * process must still be able to use its locks from shutdown functions, end with PHP's own exit code 255, leave
 * nothing held in Redis, and (where valgrind is at hand, run on the child itself) touch no freed memory.
 */
final class FatalErrorTest extends DeadboltTestCase
{
    /** A \Redis whose evalSha() fails fatally once, when told to: inside the client call release() makes. */
    private const FAILING_CLIENT = <<<'PHP'
        class FailingRedis extends Redis {
            public ?string $failWith = null;
            public function evalSha($sha, $args = [], $keys = 0): mixed {
                $how = $this->failWith;
                $this->failWith = null;
                if ('error' === $how) {
                    trigger_error('the client failed fatally', E_USER_ERROR);
                }
                if ('memory' === $how) {
                    ini_set('memory_limit', (string) (memory_get_usage() + (4 << 20)));
                    $waste = str_repeat('x', 64 << 20);
                }
                return parent::evalSha($sha, $args, $keys);
            }
        }
        $client = new FailingRedis();
        $client->connect('127.0.0.1', $vars['port']);
        $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($client));
        PHP;

    /**
     * @return iterable<string, array{string}>
     */
    public static function fatalErrors(): iterable
    {
        yield 'E_USER_ERROR' => ['error'];
        yield 'memory exhausted' => ['memory'];
    }

    /**
     * The Key's mutex was left locked by the jump: the next call on the lock, from a shutdown function, hung.
     *
     * @dataProvider fatalErrors
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\DataProvider('fatalErrors')]
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testALockWhoseReleaseEndedInAFatalErrorIsStillUsableFromAShutdownFunction(string $how): void
    {
        $resource = uniqid('fatal-release-', true);
        $result = PhpProcess::run(self::FAILING_CLIENT.<<<'PHP'
            $lock = $factory->createLock($vars['resource'], 300.0);
            $lock->acquire();
            register_shutdown_function(function () use ($lock) {
                echo 'held after the fatal error: ', var_export($lock->isAcquired(), true), "\n";
                $lock->release();
                echo 'released: ', var_export(!$lock->isAcquired(), true), "\n";
            });
            $client->failWith = $vars['how'];
            $lock->release();
            echo "not reached\n";
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource, 'how' => $how], timeout: 30.0);

        $this->assertSame(255, $result['exit'], 'the fatal error ends the script; stderr: '.$result['stderr']);
        $this->assertStringContainsString('error', $result['stderr']);
        $this->assertSame("held after the fatal error: true\nreleased: true\n", $result['stdout']);
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'nothing is left in Redis');
    }

    /**
     * The same through a Predis client (pure PHP: its exception handling runs inside the jump). Before, the shutdown
     * function's first call on the lock crashed reading the exception parked by the failed call.
     *
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testAPredisLockWhoseReleaseEndedInAFatalErrorIsStillUsableFromAShutdownFunction(): void
    {
        $resource = uniqid('fatal-predis-', true);
        $result = PhpProcess::run(<<<'PHP'
            require $vars['predis'];
            class FailingPredis extends Predis\Client {
                public bool $fail = false;
                public function executeCommand(Predis\Command\CommandInterface $command) {
                    if ($this->fail && 'EVALSHA' === strtoupper($command->getId())) {
                        $this->fail = false;
                        trigger_error('the client failed fatally', E_USER_ERROR);
                    }
                    return parent::executeCommand($command);
                }
            }
            $client = new FailingPredis(['host' => '127.0.0.1', 'port' => $vars['port']]);
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($client)))->createLock($vars['resource'], 300.0);
            $lock->acquire();
            register_shutdown_function(function () use ($lock) {
                echo 'held after the fatal error: ', var_export($lock->isAcquired(), true), "\n";
                $lock->release();
                echo 'released: ', var_export(!$lock->isAcquired(), true), "\n";
            });
            $client->fail = true;
            $lock->release();
            echo "not reached\n";
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource, 'predis' => DEADBOLT_PREDIS_AUTOLOAD], timeout: 30.0);

        $this->assertSame(255, $result['exit'], 'the fatal error ends the script; stderr: '.$result['stderr']);
        $this->assertStringContainsString('the client failed fatally', $result['stdout'].$result['stderr']);
        $this->assertSame("held after the fatal error: true\nreleased: true\n", $result['stdout']);
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'nothing is left in Redis');
    }

    /**
     * The release Deadbolt makes at the end of the request for locks on lent clients: a fatal error in the client
     * call there is the engine's again, and the locks after it are left to their TTL, without a crash.
     *
     * @group not-under-valgrind
     */
    #[\PHPUnit\Framework\Attributes\Group('not-under-valgrind')]
    public function testAFatalErrorInsideTheEndOfRequestReleaseEndsTheProcessCleanly(): void
    {
        $resource = uniqid('fatal-shutdown-', true);
        $result = PhpProcess::run(self::FAILING_CLIENT.<<<'PHP'
            $first = $factory->createLock($vars['resource'].'-1', 300.0);
            $second = $factory->createLock($vars['resource'].'-2', 300.0);
            $first->acquire();
            $second->acquire();
            $client->failWith = 'memory';
            echo "end of script\n";
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource], timeout: 30.0);

        $this->assertSame(255, $result['exit'], 'stderr: '.$result['stderr']);
        $this->assertStringContainsString('Allowed memory size', $result['stderr']);
        $this->assertSame("end of script\n", $result['stdout']);
        $this->assertSame(1, SharedRedis::client()->exists($resource.'-2'), 'the lock after the failed release is left to its TTL');
        SharedRedis::client()->del($resource.'-1', $resource.'-2');
    }

    /**
     * Shutdown functions registered after a lock was taken ran after Deadbolt's own end-of-request release, so they
     * found their locks already released.
     */
    public function testShutdownFunctionsOfTheApplicationRunBeforeTheEndOfRequestRelease(): void
    {
        $resource = uniqid('shutdown-order-', true);
        $result = PhpProcess::run(<<<'PHP'
            $client = new Redis();
            $client->connect('127.0.0.1', $vars['port']);
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($client)))->createLock($vars['resource'], 300.0);
            $lock->acquire();
            register_shutdown_function(function () use ($lock) {
                echo 'held in a shutdown function: ', var_export($lock->isAcquired(), true), "\n";
            });
            register_shutdown_function(function () use ($lock) {
                echo 'and in the next one: ', var_export($lock->isAcquired(), true), "\n";
            });
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource], timeout: 30.0);

        $this->assertSame(0, $result['exit'], 'stderr: '.$result['stderr']);
        $this->assertSame("held in a shutdown function: true\nand in the next one: true\n", $result['stdout']);
        $this->assertSame(0, SharedRedis::client()->exists($resource), 'released at the end of the request');
    }

    /**
     * After a fatal error PHP runs no destructors: a shutdown function that drops held Lock objects freed them
     * without Deadbolt hearing of it, and the end-of-request release then read freed memory. Now it still releases
     * those locks.
     */
    public function testLocksWhoseObjectsWereFreedAfterAFatalErrorAreStillReleased(): void
    {
        $resource = uniqid('freed-after-fatal-', true);
        $result = $this->runChecked(<<<'PHP'
            $locks = [];
            register_shutdown_function(function () use (&$locks) { $locks = []; echo "dropped\n"; });
            $client = new Redis();
            $client->connect('127.0.0.1', $vars['port']);
            $factory = new Deadbolt\LockFactory(new Deadbolt\Store\RedisStore($client));
            foreach ([1, 2, 3] as $i) {
                $locks[$i] = $factory->createLock($vars['resource'].'-'.$i, 300.0);
                $locks[$i]->acquire();
            }
            trigger_error('fatal', E_USER_ERROR);
            PHP, ['port' => SharedRedis::port(), 'resource' => $resource]);

        $this->assertSame(255, $result['exit'], 'stderr: '.$result['stderr']);
        $this->assertSame("dropped\n", $result['stdout']);
        $this->assertSame(0, SharedRedis::client()->exists($resource.'-1', $resource.'-2', $resource.'-3'));
    }

    /**
     * A logger that replaces itself (setLogger() inside log()) while the Lock holds the only reference to it: the
     * logger was freed while its own log() ran.
     */
    public function testALoggerMayReplaceItselfInsideLog(): void
    {
        $result = $this->runChecked(<<<'PHP'
            final class SwappingLogger {
                public ?Deadbolt\Lock $lock = null;
                public string $name;
                public function __construct(string $name) { $this->name = str_repeat($name, 64); }
                public function log($level, $message, array $context = []): void {
                    if (null !== $this->lock) {
                        $lock = $this->lock;
                        $this->lock = null;
                        $lock->setLogger(new SwappingLogger('b'));
                    }
                    echo $this->name[0], ' ', $message, "\n";
                }
            }
            $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\InMemoryStore()))->createLock('swap');
            $logger = new SwappingLogger('a');
            $logger->lock = $lock;
            $lock->setLogger($logger);
            unset($logger);
            $lock->acquire();
            $lock->release();
            PHP);

        $this->assertSame(0, $result['exit'], 'stderr: '.$result['stderr']);
        $lines = explode("\n", trim($result['stdout']));
        $this->assertStringStartsWith('a Successfully acquired', $lines[0]);
        $this->assertStringStartsWith('b ', end($lines), 'the new logger takes over');
    }
}
