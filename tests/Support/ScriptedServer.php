<?php

declare(strict_types=1);

namespace Deadbolt\Tests\Support;

/**
 * A database server that a pair of scripts runs (scripts/NAME-start.sh DIR prints its port, scripts/NAME-stop.sh DIR
 * [keep] stops it at once, as in a crash): its own data under the system's temporary directory, a free loopback
 * port. Stopped when the object dies in the process that started it (copies in forked children never touch it);
 * stop() and startAgain() make a server restart on the same port with the same data.
 */
trait ScriptedServer
{
    private readonly int $ownerPid;

    private function __construct(public readonly int $port, private readonly string $dir)
    {
        $this->ownerPid = posix_getpid();
    }

    /**
     * The scripts' NAME: scripts/NAME-start.sh and scripts/NAME-stop.sh.
     */
    abstract private static function scripts(): string;

    public static function start(): self
    {
        $dir = sys_get_temp_dir().'/deadbolt-'.self::scripts().'-'.bin2hex(random_bytes(6));

        return new self((int) self::script('start', $dir), $dir);
    }

    /**
     * Stops the server at once (its sessions end as in a crash).
     */
    public function stop(): void
    {
        self::script('stop', $this->dir, 'keep');
    }

    /**
     * Starts the stopped server again, on the same port, with no session.
     */
    public function startAgain(): void
    {
        self::script('start', $this->dir);
    }

    public function __destruct()
    {
        if (posix_getpid() === $this->ownerPid) {
            self::script('stop', $this->dir);
        }
    }

    private static function script(string $action, string $dir, string ...$args): string
    {
        $name = self::scripts().'-'.$action.'.sh';
        $command = array_map('escapeshellarg', ['bash', \dirname(__DIR__, 2).'/scripts/'.$name, $dir, ...$args]);
        exec(implode(' ', $command).' 2>&1', $output, $status);
        if (0 !== $status) {
            throw new \RuntimeException("$name failed: ".implode("\n", \array_slice($output, -10)));
        }

        return trim(implode("\n", $output));
    }
}
