#!/usr/bin/env bash
# Starts a private memcached on a free loopback port (no UDP, 16 MB) for the tests and benchmarks and prints its port.
# Usage: scripts/memcached-start.sh DIR   (its pidfile goes to DIR; stop with memcached-stop.sh DIR)
set -euo pipefail
source "$(dirname "$0")/lib/free-port.sh"
dir=${1:?usage: memcached-start.sh DIR}
php=$(bash "$(dirname "$0")/php-binary.sh")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
user=(); [ "$(id -u)" -eq 0 ] && user=(-u root)   # memcached refuses root unless told which user to be
# A free port (scripts/lib/free-port.sh); one lost before the server binds it is tried again.
for attempt in 1 2 3 4 5; do
  port=$(free_port "$php")
  memcached -l 127.0.0.1 -p "$port" -U 0 -m 16 "${user[@]}" -d -P "$dir/memcached.pid"
  for _ in $(seq 1 50); do
    if "$php" -n -r '$s = @stream_socket_client("tcp://127.0.0.1:'"$port"'", $e, $m, 0.5); if (!$s) exit(1);
        fwrite($s, "version\r\n"); exit(str_starts_with((string) fgets($s), "VERSION ") ? 0 : 1);' 2>/dev/null; then
      echo "$port" > "$dir/port"
      echo "$port"
      exit 0
    fi
    sleep 0.1
  done
  [ -f "$dir/memcached.pid" ] && kill "$(cat "$dir/memcached.pid")" 2>/dev/null || true
done
echo "memcached-start: could not start memcached" >&2
exit 1
