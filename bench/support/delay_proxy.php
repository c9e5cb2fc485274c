<?php

/*
 * A TCP forwarder that holds each request for a fixed time before passing it on: a Redis "across the network" on a
 * machine that has only loopback (and no netem). Replies pass straight back, so a round trip costs the delay once.
 *
 *   php bench/support/delay_proxy.php TARGET_PORT DELAY_MS
 *
 * It sleeps in stream_select() between chunks: the delay is waiting, not CPU. It listens on a free loopback port,
 * prints "ready PORT", and runs until its standard input closes (its parent ended, however it ended) or it is killed. Writes are not retried: Redis requests and replies of a lock are far
 * smaller than a loopback socket's buffer.
 */

declare(strict_types=1);

[, $targetPort, $delayMs] = $argv + [null, null, null];
if (!ctype_digit((string) $targetPort) || !is_numeric($delayMs)) {
    fwrite(STDERR, "usage: php delay_proxy.php TARGET_PORT DELAY_MS\n");
    exit(2);
}
$delay = (float) $delayMs / 1000;
$server = stream_socket_server('tcp://127.0.0.1:0', $errno, $error);
if ($server === false) {
    fwrite(STDERR, "cannot listen: $error\n");
    exit(1);
}
echo 'ready ', parse_url('tcp://' . stream_socket_get_name($server, false), PHP_URL_PORT), "\n";

/** @var array<int, array{client: resource, upstream: resource, queue: list<array{float, string}>}> $pairs */
$pairs = [];
while (true) {
    $read = [$server, STDIN];
    foreach ($pairs as $pair) {
        $read[] = $pair['client'];
        $read[] = $pair['upstream'];
    }
    $due = INF;
    foreach ($pairs as $pair) {
        if ($pair['queue'] !== []) {
            $due = min($due, $pair['queue'][0][0]);
        }
    }
    $wait = is_infinite($due) ? null : max(0.0, $due - microtime(true));
    $write = $except = null;
    $ready = stream_select($read, $write, $except, $wait === null ? null : 0, $wait === null ? null : (int) ($wait * 1e6));
    if ($ready === false) {
        exit(1);
    }
    foreach ($read as $socket) {
        if ($socket === STDIN) {
            if (fread(STDIN, 1024) === '' && feof(STDIN)) {
                exit(0);
            }
            continue;
        }
        if ($socket === $server) {
            $client = stream_socket_accept($server);
            $upstream = @stream_socket_client("tcp://127.0.0.1:$targetPort", $errno, $error, 2.0);
            if ($client === false || $upstream === false) {
                continue;
            }
            foreach ([$client, $upstream] as $end) {
                stream_set_blocking($end, false);
                if (function_exists('socket_import_stream')) {
                    socket_set_option(socket_import_stream($end), SOL_TCP, TCP_NODELAY, 1);
                }
            }
            $pairs[(int) $client] = ['client' => $client, 'upstream' => $upstream, 'queue' => []];
            continue;
        }
        foreach ($pairs as $id => &$pair) {
            if ($socket !== $pair['client'] && $socket !== $pair['upstream']) {
                continue;
            }
            $data = fread($socket, 65536);
            if ($data === '' || $data === false) {
                if (feof($socket)) {
                    fclose($pair['client']);
                    fclose($pair['upstream']);
                    unset($pairs[$id]);
                }
                break;
            }
            if ($socket === $pair['client']) {
                $pair['queue'][] = [microtime(true) + $delay, $data];
            } else {
                fwrite($pair['client'], $data);
            }
            break;
        }
        unset($pair);
    }
    $now = microtime(true);
    foreach ($pairs as &$pair) {
        while ($pair['queue'] !== [] && $pair['queue'][0][0] <= $now) {
            fwrite($pair['upstream'], array_shift($pair['queue'])[1]);
        }
    }
    unset($pair);
}
