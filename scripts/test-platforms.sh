#!/usr/bin/env bash
# make test-platforms: PHP 8.5 (x86_64) and Debian 13 arm64 with the portable subset, and every arm64 .so that
# make dist packages. The two arm64 roots (Debian 12 and 13 with PHP: dpkg under qemu, the long part) are made in
# the background while the rest goes on: the PHP 8.5 suite and the PHP 8.5 arm64 build need only the x86_64 roots
# (php85, cross); the PHP 8.2 and 8.4 arm64 builds read their PHP from the arm64 roots, and the arm64 suite runs in
# one. A failure waits for the arm64 roots to be made (never left half-made with their mounts), then fails.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/foreign-arch.sh arm64
mkdir -p target/roots-logs
arm64_log=target/roots-logs/arm64-roots.log
bash scripts/ensure-roots.sh debian12-arm64-php debian13-arm64-php > "$arm64_log" 2>&1 &
arm64_roots=$!
rc=0
# (&&, not a subshell under set -e: bash ignores -e inside a command whose status is tested)
bash scripts/ensure-roots.sh php85 php85-php cross && bash scripts/test-php85.sh && bash scripts/build-arm64.sh 8.5 \
  || rc=$?
arm64_rc=0; wait "$arm64_roots" || arm64_rc=$?
cat "$arm64_log"
((rc == 0 && arm64_rc == 0)) || { echo "test-platforms: FAILED after $((SECONDS - start)) s"; exit 1; }
bash scripts/build-arm64.sh 8.2 8.4
bash scripts/test-arm64.sh
echo "test-platforms: passed in $((SECONDS - start)) s"
