#!/usr/bin/env bash
# Stops the PostgreSQL that postgres-start.sh started in DIR (at once: its sessions end as in a crash) and removes
# DIR; with "keep", DIR stays, for postgres-start.sh DIR to start the same server again.
set -u
dir=${1:?usage: postgres-stop.sh DIR [keep]}
bin=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1)
as=(); [ "$(id -u)" -eq 0 ] && as=(runuser -u postgres --)
[ -d "$dir/data" ] && "${as[@]}" "$bin/pg_ctl" -D "$dir/data" -m immediate -w -s stop > /dev/null 2>&1
[ "${2:-}" = keep ] || rm -rf "$dir"
