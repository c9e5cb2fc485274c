#!/usr/bin/env bash
# The demo: the daily report job started twice at the same moment on one flock directory.
# One run takes the lock and works; the other finds it held and skips. Both log one line.
#
#   scripts/demo.sh path/to/libdeadbolt.so   # the build tree's extension (make demo)
#   scripts/demo.sh --installed              # the extension the system's php loads (package tests)
set -euo pipefail
cd "$(dirname "$0")/.."
arg=${1:?usage: demo.sh path/to/libdeadbolt.so | --installed}
lock_dir=$(mktemp -d /tmp/deadbolt-demo.XXXXXX)
trap 'rm -rf "$lock_dir"' EXIT
if [ "$arg" = --installed ]; then
  run() { LOCK_DIR="$lock_dir" php examples/report.php; }
else
  run() { LOCK_DIR="$lock_dir" bash scripts/php.sh "$arg" examples/report.php; }
fi
echo "Two report jobs start at once, LOCK_DIR=$lock_dir:"
run > "$lock_dir/a.log" & a=$!
run > "$lock_dir/b.log" & b=$!
status=0
wait "$a" || status=$?
wait "$b" || status=$?
cat "$lock_dir/a.log" "$lock_dir/b.log"
outcomes=$(cat "$lock_dir/a.log" "$lock_dir/b.log" | grep -o '"outcome":"[a-z]*"' | sort | tr '\n' ' ')
if [ "$status" -ne 0 ] || [ "$outcomes" != '"outcome":"acquired" "outcome":"skipped" ' ]; then
  echo "demo: expected one acquired and one skipped run, got: $outcomes (exit $status)" >&2
  exit 1
fi
echo "One run acquired the lock and worked; the other skipped. The lock file stays, which is fine:"
ls -l "$lock_dir" | grep '\.lock$'
