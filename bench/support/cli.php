<?php

/*
 * A scenario's command line: its usage line, the errors that end it (exit code 2), `--name=value` options and
 * positional arguments, positive integers, a port and a list of ports.
 */

declare(strict_types=1);

final class Cli
{
    /**
     * @param string $script the entry file as the user names it, e.g. "bench/redis.php"
     * @param string $usage  the usage line, printed after every error
     * @param string $hint   printed after the usage line (optional)
     */
    public function __construct(
        public readonly string $script,
        public readonly string $usage,
        private readonly string $hint = '',
    ) {
    }

    public function fail(string $error): never
    {
        fwrite(STDERR, "{$this->script}: $error\n{$this->usage}\n" . ($this->hint === '' ? '' : "{$this->hint}\n"));
        exit(2);
    }

    /** A whole number from 1 to 999,999,999; anything else ends the scenario with its usage. */
    public function positive(string $value, string $name): int
    {
        if (preg_match('/^\d{1,9}$/', $value) !== 1 || (int) $value < 1) {
            $this->fail("$name must be a positive integer, got '$value'");
        }

        return (int) $value;
    }

    /** Positional argument $index of $args (0 = the first after the script name), or $default when it is absent. */
    public function positional(array $args, int $index, int $default, string $name): int
    {
        return isset($args[$index]) ? $this->positive($args[$index], $name) : $default;
    }

    /**
     * The `--name=value` options among $argv (after the script name), by name, and the other arguments in order. An
     * option not in $known ends the scenario with its usage.
     *
     * @param list<string> $argv
     * @param list<string> $known
     *
     * @return array{array<string, string>, list<string>}
     */
    public function arguments(array $argv, array $known): array
    {
        $options = [];
        $positional = [];
        foreach (array_slice($argv, 1) as $arg) {
            if (preg_match('/^--([a-z-]+)=(.*)$/', $arg, $match) !== 1) {
                $positional[] = $arg;
            } elseif (in_array($match[1], $known, true)) {
                $options[$match[1]] = $match[2];
            } else {
                $this->fail("unknown option --{$match[1]}");
            }
        }

        return [$options, $positional];
    }

    /**
     * $count TCP ports from a comma-separated list (an option's value, null when the option was not given).
     *
     * @return list<int>
     */
    public function ports(?string $list, int $count, string $option): array
    {
        $ports = $list === null ? [] : array_map($this->port(...), explode(',', $list));
        if (count($ports) !== $count) {
            $this->fail("--$option needs $count port" . ($count === 1 ? '' : 's'));
        }

        return $ports;
    }

    /** A TCP port, 1 to 65535. */
    public function port(string $value): int
    {
        $port = $this->positive($value, 'the port');
        if ($port > 65535) {
            $this->fail("no such port: $port");
        }

        return $port;
    }
}
