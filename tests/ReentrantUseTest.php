<?php

declare(strict_types=1);

namespace Deadbolt\Tests;

use Deadbolt\Tests\Support\DeadboltTestCase;
use Deadbolt\Tests\Support\PhpProcess;

/**
 * A Key or a Lock used again from inside a call made with it: by the store's own PHP code, by a member of a combined
 * store, by a signal handler during a wait. Issue 25, item 6: each of these blocked for ever on the Key's mutex
 * (SIGTERM could not end the process). Each runs in a child php with a bounded wait, so a hang fails the test; the
 * answer is the documented \BadMethodCallException, or the call works.
 */
final class ReentrantUseTest extends DeadboltTestCase
{
    private const STORE = <<<'PHP'
        final class ReentrantStore implements Deadbolt\Store\PersistingStoreInterface
        {
            public ?\Closure $inside = null;
            public array $seen = [];
            private array $held = [];

            public function save(Deadbolt\Key $key): void
            {
                if (null !== $this->inside) {
                    try {
                        $this->seen[] = var_export(($this->inside)($key), true);
                    } catch (\BadMethodCallException $e) {
                        $this->seen[] = 'BadMethodCallException: '.$e->getMessage();
                    }
                }
                $this->held[(string) $key] = true;
            }
            public function delete(Deadbolt\Key $key): void { unset($this->held[(string) $key]); }
            public function exists(Deadbolt\Key $key): bool { return isset($this->held[(string) $key]); }
            public function putOffExpiration(Deadbolt\Key $key, float $ttl): void {}
        }
        PHP;

    /** @return array{exit: int, stdout: string, stderr: string} */
    private static function child(string $code): array
    {
        return PhpProcess::run(self::STORE."\n".$code, timeout: 20.0);
    }

    public function testALockFromTheKeyAStoreIsHandedWorksInsideThatStoresCall(): void
    {
        $result = self::child(<<<'PHP'
            $store = new ReentrantStore();
            $factory = new Deadbolt\LockFactory($store);
            $store->inside = static fn (Deadbolt\Key $key) => $factory->createLockFromKey($key)->isAcquired();
            $lock = $factory->createLock('reentrant-lock', 30.0);
            var_dump($lock->acquire());
            echo implode("\n", $store->seen), "\n";
            PHP);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame("bool(true)\nfalse\n", $result['stdout'], $result['stderr']);
    }

    public function testACombinedMemberUsingTheCombinedStoreWithItsKeyDoesNotHang(): void
    {
        $result = self::child(<<<'PHP'
            $member = new ReentrantStore();
            $combined = new Deadbolt\Store\CombinedStore([$member, new Deadbolt\Store\InMemoryStore()], new Deadbolt\Strategy\UnanimousStrategy());
            $member->inside = static function (Deadbolt\Key $key) use ($combined) { $combined->delete($key); return 'deleted'; };
            $lock = (new Deadbolt\LockFactory($combined))->createLock('reentrant-combined', 30.0);
            try {
                var_dump($lock->acquire());
            } catch (\Throwable $e) {
                echo get_class($e), ': ', $e->getMessage(), "\n";
            }
            echo implode("\n", $member->seen), "\ndone\n";
            PHP);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertStringEndsWith("done\n", $result['stdout'], $result['stderr']);
    }

    public function testASignalHandlerAskingTheKeyOfAWaitingLockIsToldItIsBusy(): void
    {
        $result = self::child(<<<'PHP'
            $store = new Deadbolt\Store\InMemoryStore();
            $factory = new Deadbolt\LockFactory($store);
            $holder = $factory->createLock('reentrant-signal', 30.0);
            $holder->acquire();
            $key = new Deadbolt\Key('reentrant-signal');
            $waiter = $factory->createLockFromKey($key, 30.0);
            pcntl_async_signals(true);
            $answers = [];
            pcntl_signal(SIGALRM, static function () use ($key, &$answers): void {
                foreach (['getRemainingLifetime', 'isExpired', '__toString'] as $method) {
                    try {
                        $answers[] = $method.': '.var_export($key->$method(), true);
                    } catch (\BadMethodCallException $e) {
                        $answers[] = $method.': '.$e->getMessage();
                    }
                }
                var_dump($key);
            });
            pcntl_alarm(1);
            var_dump($waiter->acquire(true, 2.5));
            echo implode("\n", $answers), "\n";
            PHP);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertStringContainsString('bool(false)', $result['stdout']);
        $this->assertStringContainsString('getRemainingLifetime: This Deadbolt\Key is in use by a call in progress', $result['stdout']);
        $this->assertStringContainsString("__toString: 'reentrant-signal'", $result['stdout'], 'its resource never changes: no wait to tell it');
    }

    public function testALocksOwnGettersInsideItsCallAreToldItIsBusy(): void
    {
        $result = self::child(<<<'PHP'
            $store = new ReentrantStore();
            $lock = null;
            $store->inside = static function () use (&$lock) {
                $answers = [];
                foreach (['getRemainingLifetime', 'isExpired', 'isLost'] as $method) {
                    try {
                        $answers[] = $method.': '.var_export($lock->$method(), true);
                    } catch (\BadMethodCallException $e) {
                        $answers[] = $method.': BadMethodCallException';
                    }
                }
                return implode(', ', $answers);
            };
            $lock = (new Deadbolt\LockFactory($store))->createLock('reentrant-getters', 30.0);
            $lock->acquire();
            echo implode("\n", $store->seen), "\n";
            PHP);

        $this->assertSame(0, $result['exit'], $result['stderr']);
        $this->assertSame("'getRemainingLifetime: BadMethodCallException, isExpired: BadMethodCallException, isLost: BadMethodCallException'\n", $result['stdout'], $result['stderr']);
    }
}
