#!/usr/bin/env bash
# Starts a private redis-server on a free loopback port for the tests and prints its port.
# Usage: scripts/redis-start.sh DIR   (pidfile, log and socket go to DIR; stop with redis-stop.sh DIR)
set -euo pipefail
dir=${1:?usage: redis-start.sh DIR}
mkdir -p "$dir"
# Ask the kernel for a free port; the tiny window before redis binds it is retried below.
for attempt in 1 2 3 4 5; do
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()')
  redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --daemonize yes
  for _ in $(seq 1 50); do
    if redis-cli -p "$port" ping >/dev/null 2>&1; then
      echo "$port" > "$dir/port"
      echo "$port"
      exit 0
    fi
    sleep 0.1
  done
  [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
done
echo "redis-start: could not start redis-server (see $dir/redis.log)" >&2
exit 1
