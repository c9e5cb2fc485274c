#!/usr/bin/env bash
# Makes Debian roots the platform and package tests use, all at once (scripts/lib/roots.sh defines them): making
# one is mostly waiting on downloads or, for arm64, dpkg under qemu on one core, so they overlap well. A root that
# exists with the same recipe is kept.
#
#   scripts/ensure-roots.sh [NAME...]    # these roots (default: every one below)
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
start=$SECONDS
bash scripts/foreign-arch.sh arm64   # once, before the arm64 roots need it
logs=target/roots-logs; mkdir -p "$logs"
declare -A recipe=(
  [php85]="ensure_php85_root"
  [php85-php]="ensure_php85_clean_root"
  [cross]="ensure_cross_root"
  [debian12-arm64-php]="ensure_arm64_php_root debian12-arm64-php bookworm"
  [debian13-arm64-php]="ensure_arm64_php_root debian13-arm64-php trixie"
)
names=("$@")
((${#names[@]})) || names=(php85 php85-php cross debian12-arm64-php debian13-arm64-php)
pids=()
for name in "${names[@]}"; do
  [ -n "${recipe[$name]:-}" ] || { echo "ensure-roots: no root named $name (${!recipe[*]})" >&2; exit 2; }
  # shellcheck disable=SC2086  # the recipe is a function and its words
  ${recipe[$name]} > "$logs/$name.log" 2>&1 &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  if wait "${pids[$i]}"; then
    echo "ensure-roots: ${names[$i]}: $(tail -1 "$logs/${names[$i]}.log")"
  else
    echo "ensure-roots: ${names[$i]} FAILED:"; tail -20 "$logs/${names[$i]}.log"; failed=1
  fi
done
echo "ensure-roots: ${names[*]} in $((SECONDS - start)) s"
exit $failed
