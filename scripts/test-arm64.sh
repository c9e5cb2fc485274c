#!/usr/bin/env bash
# arm64: the PHP 8.4 arm64 build (scripts/build-arm64.sh) on Debian 13 arm64, run under qemu-user-static: in the
# debian13-arm64 root (PHP with PHPUnit, Redis, Predis, phpredis and symfony/lock from Debian's arm64 packages), the
# demo and the portable subset (scripts/test-portable.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
start=$SECONDS
bash scripts/build-arm64.sh 8.4
ensure_arm64_suite_root
DEADBOLT_ROOT_NO_TOOLCHAIN=1 bash scripts/debian-root.sh run debian13-arm64 bash -c '
  set -euo pipefail; cd "$1"
  export CARGO_TARGET_DIR=$PWD/target/arm64
  REPORT_WORK_MS=4000 bash scripts/demo.sh target/arm64/php8.4/libdeadbolt.so   # slow PHP starts: see package-check.sh
  bash scripts/test-portable.sh target/arm64/php8.4/libdeadbolt.so target/arm64/test-run
' bash "$PWD"
echo "test-arm64: passed in $((SECONDS - start)) s"
