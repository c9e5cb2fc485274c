<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Process;

use Deadbolt\LockFactory;
use Deadbolt\Tests\Support\Channel;

/**
 * The lost-update scenario behind the counter tests: several processes increment one counter file, each increment a
 * read-modify-write through separate opens under one lock. Without mutual exclusion, updates get lost.
 */
trait CountsUnderALock
{
    /**
     * Forks $processes children that each make $increments increments under a lock from $newStore(), released
     * together. Returns the counter's final content.
     *
     * @param callable(): object $newStore called in each child, for a store of its own
     */
    private function countInForks(callable $newStore, string $resource, int $processes, int $increments): string
    {
        $counter = $this->tempDir().'/counter';
        file_put_contents($counter, '0');

        $children = [];
        for ($i = 0; $i < $processes; ++$i) {
            $children[] = $this->fork(static function (Channel $parent) use ($newStore, $counter, $resource, $increments): void {
                $lock = (new LockFactory($newStore()))->createLock($resource, 30.0);
                $parent->send('ready');
                $parent->receive();
                for ($n = 0; $n < $increments; ++$n) {
                    if (!$lock->acquire(true)) {
                        throw new \RuntimeException('a blocking acquire returned false');
                    }
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

        return (string) file_get_contents($counter);
    }

    /**
     * The same with fresh php processes (not forks), whose store is built by the PHP expression $store (it may use
     * $vars). Returns the counter's final content.
     *
     * @param array<string, mixed> $vars
     */
    private function countInFreshProcesses(string $store, array $vars, string $resource, int $processes, int $increments): string
    {
        $counter = $this->tempDir().'/counter';
        file_put_contents($counter, '0');
        $vars += ['counter' => $counter, 'resource' => $resource, 'increments' => $increments];

        $children = [];
        for ($i = 0; $i < $processes; ++$i) {
            $children[] = $this->spawn(
                '$lock = (new Deadbolt\LockFactory('.$store.'))->createLock($vars[\'resource\'], 30.0);'.<<<'PHP'

                echo "ready\n";
                fgets(STDIN);
                for ($n = 0; $n < $vars['increments']; ++$n) {
                    $lock->acquire(true);
                    $value = (int) file_get_contents($vars['counter']);
                    file_put_contents($vars['counter'], (string) ($value + 1));
                    $lock->release();
                }
                PHP,
                $vars
            );
        }
        foreach ($children as $child) {
            $this->assertSame('ready', $child->readLine());
        }
        foreach ($children as $child) {
            $child->closeStdin();
        }
        foreach ($children as $child) {
            $this->assertSame(0, $child->waitForExit(300.0), $child->stderr());
        }

        return (string) file_get_contents($counter);
    }
}
