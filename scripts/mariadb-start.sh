#!/usr/bin/env bash
# Starts a private MariaDB (Debian's mariadb-server-core, no service) on a free loopback port, its data and socket in
# DIR, for the tests and benchmarks, and prints its port. A throwaway server: root without a password from loopback
# (mariadb-install-db's "normal" root), an empty database `deadbolt`, no binary log, the redo log flushed once a
# second. A second start in the same DIR (after mariadb-stop.sh DIR keep) starts the same server again on the same
# port, as after a server restart. As root the server runs as root (--user=root: it refuses otherwise).
# Usage: scripts/mariadb-start.sh DIR   (stop with mariadb-stop.sh DIR)
set -euo pipefail
source "$(dirname "$0")/lib/free-port.sh"
dir=${1:?usage: mariadb-start.sh DIR}
server=/usr/sbin/mariadbd
[ -x "$server" ] || { echo "mariadb-start: MariaDB is not installed (make test installs it)" >&2; exit 1; }
php=$(bash "$(dirname "$0")/php-binary.sh")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
as=(); [ "$(id -u)" -eq 0 ] && as=(--user=root)
client=(mariadb --no-defaults --socket="$dir/sock" -uroot)
fresh=0
if [ ! -d "$dir/data" ]; then
  mariadb-install-db --no-defaults --datadir="$dir/data" "${as[@]}" --auth-root-authentication-method=normal \
    --skip-test-db --skip-name-resolve > "$dir/install.log" 2>&1 || { cat "$dir/install.log" >&2; exit 1; }
  fresh=1
fi
# start PORT: runs the server in the background and waits until it answers on its socket (0), or has ended (1).
start() {
  rm -f "$dir/sock" "$dir/pid"
  "$server" --no-defaults --datadir="$dir/data" "${as[@]}" --port="$1" --bind-address=127.0.0.1 \
    --socket="$dir/sock" --pid-file="$dir/pid" --log-error="$dir/server.log" --skip-name-resolve --skip-log-bin \
    --innodb-flush-log-at-trx-commit=2 --innodb-buffer-pool-size=32M > /dev/null 2>&1 &
  local pid=$!
  for _ in $(seq 1 300); do
    "${client[@]}" -e 'SELECT 1' > /dev/null 2>&1 && { echo "$pid" > "$dir/server.pid"; return 0; }
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.1
  done
  kill -9 "$pid" 2>/dev/null; return 1
}
if ! start_on_port "$php" "$dir" start; then
  tail -20 "$dir/server.log" >&2
  echo "mariadb-start: could not start MariaDB" >&2
  exit 1
fi
[ $fresh = 0 ] || "${client[@]}" -e 'CREATE DATABASE deadbolt'
echo "$PORT"
