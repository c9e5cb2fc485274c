#!/usr/bin/env bash
# Makes every Debian root the platform and package tests use, all at once (scripts/lib/roots.sh defines them):
# making one is mostly waiting on downloads or, for arm64, dpkg under qemu on one core, so they overlap well. A root
# that exists with the same recipe is kept. .ci/run's test-platforms lane starts with it.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
start=$SECONDS
bash scripts/foreign-arch.sh arm64   # once, before the arm64 roots need it
logs=target/roots-logs; mkdir -p "$logs"
pids=() names=()
spawn() { local name=$1; shift; "$@" > "$logs/$name.log" 2>&1 & pids+=($!); names+=("$name"); }
spawn php85 ensure_php85_root
spawn php85-php ensure_php85_clean_root
spawn cross ensure_cross_root
spawn debian12-arm64-php ensure_arm64_php_root debian12-arm64-php bookworm
spawn debian13-arm64-php ensure_arm64_php_root debian13-arm64-php trixie
failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "ensure-roots: ${names[$i]}: $(tail -1 "$logs/${names[$i]}.log")"
  else
    echo "ensure-roots: ${names[$i]} FAILED:"; tail -20 "$logs/${names[$i]}.log"; failed=1
  fi
done
echo "ensure-roots: all roots in $((SECONDS - start)) s"
exit $failed
