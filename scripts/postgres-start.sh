#!/usr/bin/env bash
# Starts a private PostgreSQL (Debian's newest installed) on a free loopback port, its socket in DIR, for the tests
# and benchmarks, and prints its port. Trust authentication on loopback only, no fsync: a throwaway server. A second
# start in the same DIR (after postgres-stop.sh DIR keep) starts the same cluster again on the same port, as after a
# server restart. As root the server runs as the postgres user (PostgreSQL refuses root), so DIR must be reachable
# by that user (under /tmp, say).
# Usage: scripts/postgres-start.sh DIR   (stop with postgres-stop.sh DIR)
set -euo pipefail
source "$(dirname "$0")/lib/free-port.sh"
dir=${1:?usage: postgres-start.sh DIR}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
[ -x "$bin/postgres" ] || { echo "postgres-start: PostgreSQL is not installed (make test installs it)" >&2; exit 1; }
php=$(bash "$(dirname "$0")/php-binary.sh")
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
as=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres: "$dir"
  as=(runuser -u postgres --)
fi
if [ ! -d "$dir/data" ]; then
  "${as[@]}" "$bin/initdb" -D "$dir/data" -U postgres -A trust --no-sync -E UTF8 --locale=C > "$dir/initdb.log" 2>&1 \
    || { cat "$dir/initdb.log" >&2; exit 1; }
fi
start() {
  "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -l "$dir/server.log" -w -t 30 -s \
    -o "-p $1 -k $dir -h 127.0.0.1 -c fsync=off -c synchronous_commit=off -c full_page_writes=off" start
}
if ! start_on_port "$php" "$dir" start; then
  cat "$dir/server.log" >&2
  echo "postgres-start: could not start PostgreSQL" >&2
  exit 1
fi
echo "$PORT"
