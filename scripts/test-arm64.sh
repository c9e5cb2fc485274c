#!/usr/bin/env bash
# arm64: the PHP 8.4 arm64 build (scripts/build-arm64.sh) on Debian 13 arm64, run under qemu-user-static: in a
# fresh copy of the debian13-arm64-php root, with PHPUnit, Redis, Predis, phpredis and symfony/lock added from
# Debian's arm64 packages, the demo and the portable subset (scripts/test-portable.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
start=$SECONDS
bash scripts/build-arm64.sh 8.4
DEADBOLT_ROOT_NO_TOOLCHAIN=1 bash scripts/debian-root.sh run debian13-arm64-php --fresh bash -c '
  set -euo pipefail; cd "$1"; shift
  echo "test-arm64: apt-get install $* (arm64, under qemu)"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" php-redis php-xml php-mbstring \
    >/dev/null
  export CARGO_TARGET_DIR=$PWD/target/arm64
  bash scripts/demo.sh target/arm64/php8.4/libdeadbolt.so
  bash scripts/test-portable.sh target/arm64/php8.4/libdeadbolt.so target/arm64/test-run
' bash "$PWD" "${PORTABLE_SUITE_PACKAGES[@]}"
echo "test-arm64: passed in $((SECONDS - start)) s"
