#!/usr/bin/env bash
# make dist: binary packages for every PHP and machine this machine builds for, in target/dist/:
#   x86_64  PHP 8.2  the host's build (Debian 12, target/release/)                       .tgz + .deb
#   x86_64  PHP 8.4  built and packaged in the Debian 13 root (target/debian13/)          .tgz + .deb
#   x86_64  PHP 8.5  built and packaged in the php85 root (sid + experimental, target/php85/)  .tgz
#   x86_64  PHP 8.4 ZTS  built here against the thread-safe PHP of scripts/zts-php.sh (target/zts/, the thread
#                    suite's build)                                                        -zts .tgz
#   arm64   PHP 8.2, 8.4, 8.5  cross-built (scripts/build-arm64.sh), packaged in the cross root
#                    .tgz each, .deb for 8.2 (Debian 12) and 8.4 (Debian 13); the other -zts tarballs are make zts-extra's
# and the two Composer packages (the Symfony bridge, the stubs) as zips for an artifact repository
# (scripts/php-packages.sh, docs/PHP-PACKAGES.md), then SHA256SUMS over every package. A build that already exists
# is reused (cargo finds it fresh), so after make test-debian13 / make test-platforms nothing is compiled twice.
# DEADBOLT_DIST_HOST_ONLY=1: the host's packages only (no Debian root is made).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
out=$PWD/target/dist
rm -rf "$out"; mkdir -p "$out"
host=$(. /etc/os-release; echo "$VERSION_CODENAME")
bash scripts/package.sh target/release/libdeadbolt.so "$out"
bash scripts/php-packages.sh "$out" >/dev/null
if [ "${DEADBOLT_DIST_HOST_ONLY:-0}" != 1 ]; then
  if [ "$host" != trixie ]; then
    bash scripts/debian-root.sh ensure debian13 trixie make ca-certificates
    bash scripts/debian-root.sh run debian13 bash -c '
      set -euo pipefail; cd "$1"
      export CARGO_TARGET_DIR=$PWD/target/debian13
      make build >/dev/null
      bash scripts/package.sh target/debian13/release/libdeadbolt.so "$2"
    ' bash "$PWD" "$out"
  fi
  bash scripts/build-php85.sh
  bash scripts/debian-root.sh run php85 bash -c 'cd "$1" && DEADBOLT_PACKAGE_KINDS=tgz PHP_CONFIG=/usr/bin/php-config8.5 \
    bash scripts/package.sh target/php85/release/libdeadbolt.so "$2"' bash "$PWD" "$out"
  zts=$(bash scripts/zts-php.sh)
  PHP=$zts/bin/php PHP_CONFIG=$zts/bin/php-config CARGO_TARGET_DIR=$PWD/target/zts \
    cargo build --release --locked --features helgrind   # the thread suite's build (scripts/test-threads.sh)
  PHP_CONFIG=$zts/bin/php-config bash scripts/package.sh target/zts/release/libdeadbolt.so "$out"
  bash scripts/build-arm64.sh 8.2 8.4 8.5
  DEADBOLT_ROOT_NO_TOOLCHAIN=1 bash scripts/debian-root.sh run cross bash -c '
    set -euo pipefail; cd "$1"
    bash scripts/package.sh target/arm64/php8.2/libdeadbolt.so "$2" target/arm64/php8.2/facts
    bash scripts/package.sh target/arm64/php8.4/libdeadbolt.so "$2" target/arm64/php8.4/facts
    DEADBOLT_PACKAGE_KINDS=tgz bash scripts/package.sh target/arm64/php8.5/libdeadbolt.so "$2" target/arm64/php8.5/facts
  ' bash "$PWD" "$out"
fi
(cd "$out" && sha256sum -- *.tgz *.deb *.zip > SHA256SUMS)
echo "dist: $out"
ls -l "$out"
