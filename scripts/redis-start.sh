#!/usr/bin/env bash
# Starts a private redis-server (or valkey-server: DEADBOLT_REDIS_SERVER / DEADBOLT_REDIS_CLI) on a free loopback
# port for the tests and prints its port.
# Usage: scripts/redis-start.sh DIR [redis-server options...]   (pidfile, log and socket go to DIR; stop with
# redis-stop.sh DIR; the options follow the defaults, e.g. --cluster-enabled yes)
set -euo pipefail
source "$(dirname "$0")/lib/free-port.sh"
dir=${1:?usage: redis-start.sh DIR [redis-server options...]}
shift
server=${DEADBOLT_REDIS_SERVER:-redis-server}
cli=${DEADBOLT_REDIS_CLI:-redis-cli}
php=$(bash "$(dirname "$0")/php-binary.sh")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)   # redis-server changes into --dir before it opens the log: paths must be absolute
# On arm64 Redis refuses to start when its copy-on-write self-test fails (it guards background saves against an
# arm64 kernel bug); under qemu's user-mode emulation (make test-platforms) that test fails with no such kernel in
# play. These servers never save (--save "", no AOF), so the warning is waived there.
arm64=()
[ "$(uname -m)" = aarch64 ] && arm64=(--ignore-warnings ARM64-COW-BUG)
# A free port (scripts/lib/free-port.sh); one lost before the server binds it is tried again.
for attempt in 1 2 3 4 5; do
  port=$(free_port "$php")
  "$server" --port "$port" --bind 127.0.0.1 --save "" --appendonly no \
    --unixsocket "$dir/redis.sock" --unixsocketperm 700 \
    --dir "$dir" --pidfile "$dir/redis.pid" --logfile "$dir/redis.log" --daemonize yes "${arm64[@]}" "$@"
  for _ in $(seq 1 50); do
    if "$cli" -p "$port" ping >/dev/null 2>&1; then
      echo "$port" > "$dir/port"
      echo "$port"
      exit 0
    fi
    sleep 0.1
  done
  [ -f "$dir/redis.pid" ] && kill "$(cat "$dir/redis.pid")" 2>/dev/null || true
done
echo "redis-start: could not start $server (see $dir/redis.log)" >&2
exit 1
