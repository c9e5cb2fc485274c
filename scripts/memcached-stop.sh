#!/usr/bin/env bash
# Stops the memcached that memcached-start.sh started in DIR.
set -u
dir=${1:?usage: memcached-stop.sh DIR}
if [ -f "$dir/memcached.pid" ]; then
  pid=$(cat "$dir/memcached.pid")
  kill "$pid" 2>/dev/null || true
  for _ in $(seq 1 50); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi
rm -rf "$dir"
