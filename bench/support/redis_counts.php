<?php

/*
 * What a lock cycle of bench/redis.php makes Redis do, per variant: the commands Redis executed (a dedicated pass
 * between CONFIG RESETSTAT and INFO commandstats, the commands a script calls included) and the commands the client
 * itself sent, i.e. round trips (a short pass under MONITOR). Both need a private server: any other client's
 * commands would be counted too.
 */

declare(strict_types=1);

require_once __DIR__ . '/cycle_rounds.php';
require_once __DIR__ . '/environment.php';
require_once __DIR__ . '/resp.php';

/**
 * Commands Redis executed per cycle: CONFIG RESETSTAT, $cycles cycles, INFO commandstats. Redis 7 counts the commands
 * a script calls (redis.call) under their own names too. Left out: what the measuring connection itself sends (INFO,
 * CONFIG); a client's one-off CONFIG GET on its first connection happened during the warm-up.
 *
 * @return array{commands: array<string, array<string, float>>, serverUs: array<string, array<string, float>>,
 *   note: ?string} per variant and command name: calls per cycle, and µs Redis spent on them per cycle
 */
function countExecuted(CycleRounds $bench, Resp $meter, int $cycles): array
{
    $commands = $serverUs = [];
    foreach ($bench->names() as $name) {
        try {
            $meter->call('CONFIG', 'RESETSTAT');
        } catch (RuntimeException $e) {
            return ['commands' => $commands, 'serverUs' => $serverUs,
                'note' => 'CONFIG RESETSTAT was refused (' . $e->getMessage() . '): no command counts.'];
        }
        if (!$bench->run($name, $cycles)) {
            continue;
        }
        $stats = $meter->commandStats();
        $commands[$name] = array_map(static fn (array $s): float => $s[0] / $cycles, $stats);
        $serverUs[$name] = array_map(static fn (array $s): float => $s[1] / $cycles, $stats);
    }

    return ['commands' => $commands, 'serverUs' => $serverUs, 'note' => null];
}

/**
 * What the client sent per cycle (= round trips, each command waits for its reply): a pass of $cycles cycles under
 * MONITOR (its output is buffered by Redis until read: keep it short). MONITOR shows the commands a script calls as
 * coming from "lua"; those are left out here. A sentinel ECHO from the measuring connection marks the end of the
 * pass in the stream.
 *
 * @return array{sent: array<string, array<string, float>>, note: ?string} per variant and command name: per cycle
 */
function countSent(CycleRounds $bench, Resp $meter, int $port, int $cycles): array
{
    $sent = [];
    foreach ($bench->names() as $name) {
        try {
            $monitor = new Resp(REDIS_HOST, $port);
            if ($monitor->call('MONITOR') !== 'OK') {
                throw new RuntimeException('MONITOR did not answer OK');
            }
        } catch (RuntimeException $e) {
            return ['sent' => $sent,
                'note' => 'MONITOR is not available (' . $e->getMessage() . '): no round-trip counts.'];
        }
        $ok = $bench->run($name, $cycles);
        $sentinel = 'deadbolt-bench-sentinel-' . bin2hex(random_bytes(4));
        $meter->call('ECHO', $sentinel);
        $self = $meter->localAddress();
        $counts = [];
        while (true) {
            $line = $monitor->readLine();
            if (str_contains($line, $sentinel) && str_contains($line, $self)) {
                break;
            }
            if (preg_match('/^\+\d+\.\d+ \[\d+ ([^\]]+)\] "([^"]*)"(?: "([^"]*)")?/', $line, $m) !== 1
                || $m[1] === 'lua' || $m[1] === $self) {
                continue;
            }
            $command = strtolower($m[2]);
            if (in_array($command, ['script', 'config', 'client', 'function'], true) && isset($m[3])) {
                $command .= '|' . strtolower($m[3]);
            }
            $counts[$command] = ($counts[$command] ?? 0) + 1;
        }
        $monitor->close();
        if ($ok) {
            arsort($counts);
            $sent[$name] = array_map(static fn (int $calls): float => $calls / $cycles, $counts);
        }
    }

    return ['sent' => $sent, 'note' => null];
}
