#!/usr/bin/env bash
# make zts-arm64: the arm64 -zts tarball, built and checked on this machine:
#   1. an arm64 thread-safe PHP 8.4, cross-compiled as php:8.4-zts is configured (scripts/zts-php.sh arm64)
#   2. Deadbolt cross-built for it (scripts/build-arm64.sh 8.4-zts), packaged into target/dist/ as
#      php_deadbolt-<version>_php8.4-arm64-linux-glibc-zts.tgz
#   3. in a fresh copy of the cross root, under qemu: that PHP extracted at /, the tarball's install.sh, the report
#      job, 8 PHP threads of one process sharing a lock with the installed module (the thread suite's host,
#      cross-compiled there), uninstall
# Outside make dist and .ci/run: the PHP build alone is 5 minutes on two idle cores (9 CPU-minutes), more than the
# CI budget has left. make dist empties target/dist/: run this after it.
set -euo pipefail
cd "$(dirname "$0")/.."
export DEADBOLT_ROOT_NO_TOOLCHAIN=1   # the cross root's own Rust and GCC
here=$(bash scripts/zts-php.sh arm64)
bash scripts/build-arm64.sh 8.4-zts
mkdir -p target/dist
bash scripts/debian-root.sh run cross bash -c 'cd "$1" && bash scripts/package.sh target/arm64/php8.4-zts/libdeadbolt.so \
  target/dist target/arm64/php8.4-zts/facts' bash "$PWD"
tgz=$(ls target/dist/php_deadbolt-*_php8.4-arm64-linux-glibc-zts.tgz | head -1)
bash scripts/debian-root.sh run cross --fresh bash -c '
  set -euo pipefail
  cd "$1"; here=$2 tgz=$3
  tar -xzf target/zts-php-arm64/php-zts.tgz -C /
  export PATH=/usr/local/bin:$PATH
  CC=aarch64-linux-gnu-gcc bash scripts/thread-driver.sh "$here" /tmp/driver /usr/local/lib
  DEADBOLT_CHECK_THREADS=/tmp/driver bash scripts/package-check.sh tgz "$tgz"
' bash "$PWD" "$here" "$tgz"
echo "zts-arm64: $tgz installed into an arm64 ZTS PHP 8.4 (qemu): loaded, report job, PHP threads; uninstalled"
