#!/usr/bin/env bash
# make zts-extra: the -zts tarballs beyond the one make dist makes (x86_64 PHP 8.4), each built and checked here:
#   arm64 PHP 8.4   an arm64 ZTS PHP cross-compiled as php:8.4-zts is configured (scripts/zts-php.sh arm64), Deadbolt
#                   cross-built for it (scripts/build-arm64.sh 8.4-zts), checked in a fresh copy of the cross root
#                   under qemu (its arm64 libc is the one that PHP was built against)
#   x86_64 PHP 8.2  a ZTS PHP 8.2 built from Debian 12's source the same way (scripts/zts-php.sh x86_64 8.2), Deadbolt
#                   built for it here, checked in a fresh Debian 13 root with nothing but that PHP
# Each check: that PHP extracted at /, the tarball's install.sh, the report job, 8 PHP threads of one process sharing
# a lock with the installed module (the thread suite's host), uninstall. The tarballs go to target/dist/ (make dist
# empties it: run this after). Outside make dist and .ci/run: each PHP build is 5 minutes on two idle cores (9
# CPU-minutes), more than the CI budget has left.
#
#   scripts/zts-extra.sh [arm64] [php8.2]      # default: both
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p target/dist
only=("$@"); ((${#only[@]})) || only=(arm64 php8.2)

# check ROOT PHP_TGZ DRIVER TGZ: the package check in a fresh copy of ROOT with that PHP at /usr/local, and DRIVER
# (the thread host, built for that PHP with /usr/local/lib as its library path) for PHP threads.
check() {
  bash scripts/debian-root.sh run "$1" --fresh bash -c '
    set -euo pipefail
    cd "$1"
    tar -xzf "$2" -C /
    export PATH=/usr/local/bin:$PATH
    DEADBOLT_CHECK_THREADS=$PWD/$3 bash scripts/package-check.sh tgz "$4"
  ' bash "$PWD" "$2" "$3" "$4"
  echo "zts-extra: $4 installed into that ZTS PHP ($1): loaded, report job, PHP threads; uninstalled"
}

arm64() {
  local here tgz
  export DEADBOLT_ROOT_NO_TOOLCHAIN=1   # the cross root's own Rust and GCC
  here=$(bash scripts/zts-php.sh arm64)
  bash scripts/build-arm64.sh 8.4-zts
  bash scripts/debian-root.sh run cross bash -c 'cd "$1" && bash scripts/package.sh \
    target/arm64/php8.4-zts/libdeadbolt.so target/dist target/arm64/php8.4-zts/facts &&
    CC=aarch64-linux-gnu-gcc bash scripts/thread-driver.sh "$2" target/arm64/php8.4-zts/driver /usr/local/lib' \
    bash "$PWD" "$here"
  tgz=$(ls target/dist/php_deadbolt-*_php8.4-arm64-linux-glibc-zts.tgz | head -1)
  check cross target/zts-php-arm64/php-zts.tgz target/arm64/php8.4-zts/driver "$tgz"
  unset DEADBOLT_ROOT_NO_TOOLCHAIN
}

php8.2() {
  local here tgz
  here=$(bash scripts/zts-php.sh x86_64 8.2)
  PHP=$here/bin/php PHP_CONFIG=$here/bin/php-config CARGO_TARGET_DIR=$PWD/target/zts-8.2 \
    cargo build --release --locked --features helgrind
  PHP_CONFIG=$here/bin/php-config bash scripts/package.sh target/zts-8.2/release/libdeadbolt.so target/dist
  bash scripts/thread-driver.sh "$here" target/zts-8.2/driver /usr/local/lib
  tgz=$(ls target/dist/php_deadbolt-*_php8.2-x86_64-linux-glibc-zts.tgz | head -1)
  bash scripts/debian-root.sh ensure debian13-base trixie libssl3t64
  DEADBOLT_ROOT_NO_TOOLCHAIN=1 check debian13-base target/zts-php-8.2/php-zts.tgz target/zts-8.2/driver "$tgz"
}

for what in "${only[@]}"; do "$what"; done
