#!/usr/bin/env bash
# Stops the MariaDB that mariadb-start.sh started in DIR (at once, SIGKILL: its sessions end as in a crash) and removes
# DIR; with "keep", DIR stays, for mariadb-start.sh DIR to start the same server again.
set -u
dir=${1:?usage: mariadb-stop.sh DIR [keep]}
if [ -f "$dir/server.pid" ]; then
  pid=$(cat "$dir/server.pid")
  kill -9 "$pid" 2>/dev/null
  # Gone only when its process is: a restart must not find the old server on the port or the data directory.
  while kill -0 "$pid" 2>/dev/null; do sleep 0.05; done
  rm -f "$dir/server.pid"
fi
[ "${2:-}" = keep ] || rm -rf "$dir"
