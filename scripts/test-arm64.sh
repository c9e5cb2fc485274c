#!/usr/bin/env bash
# arm64: the PHP 8.4 arm64 build (scripts/build-arm64.sh) on Debian 13 arm64, run under qemu-user-static: in a
# throw-away copy of the debian13-arm64-php root with PHPUnit, Redis, Predis, phpredis and symfony/lock added from
# Debian's arm64 packages (a root of their own would cost a second arm64 debootstrap, ~8 CPU minutes under qemu,
# for what an overlay installs in ~3), the demo and the portable subset (scripts/test-portable.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
start=$SECONDS
bash scripts/build-arm64.sh 8.4
ensure_arm64_php_root debian13-arm64-php trixie
DEADBOLT_ROOT_NO_TOOLCHAIN=1 bash scripts/debian-root.sh run debian13-arm64-php --fresh bash -c '
  set -euo pipefail; cd "$1"; shift
  echo "test-arm64: apt-get install $* (arm64, under qemu)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null
  export CARGO_TARGET_DIR=$PWD/target/arm64
  REPORT_WORK_MS=4000 bash scripts/demo.sh target/arm64/php8.4/libdeadbolt.so   # slow PHP starts: see package-check.sh
  DEADBOLT_PORTABLE_EXCLUDE_GROUPS=slow,parser \
    bash scripts/test-portable.sh target/arm64/php8.4/libdeadbolt.so target/arm64/test-run
' bash "$PWD" "${ARM64_SUITE_PACKAGES[@]}"
echo "test-arm64: passed in $((SECONDS - start)) s"
