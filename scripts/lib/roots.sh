# shellcheck shell=bash
# Sourced, not run: the Debian roots beyond the host, each defined once (scripts/debian-root.sh makes and caches
# them under target/roots/).
#
#   php85              Debian sid with PHP 8.5 from Debian experimental (amd64): builds and tests for PHP 8.5
#   cross              Debian sid (amd64) with Rust, an arm64 Rust standard library and the aarch64 C toolchain,
#                      plus experimental's PHP 8.5 for arm64 (run under qemu): builds and packages every arm64 .so
#   php85-php          Debian sid with experimental's php8.5-cli and php8.5-fpm only: the PHP 8.5 tarball's test root
#   debian12-arm64-php Debian 12 arm64 with php-cli and php-fpm only: the PHP 8.2 arm64 packages' test root
#   debian13-arm64-php Debian 13 arm64 with php-cli and php-fpm only: the PHP 8.4 arm64 packages' test root
#
# Why sid: PHP 8.5 is packaged only in experimental, which needs sid's libraries; and the arm64 Rust standard
# library must match the compiler exactly, so the cross compiler is Debian's own rustc (sid: 1.97; trixie's 1.85 is
# older than what the locked crates need, redis 1.8 asks 1.88 and parking_lot 0.13 asks 1.95).

ROOT_TOOL=${ROOT_TOOL:-scripts/debian-root.sh}

# What the PHP suites need beside PHP itself (the php85 root; the arm64 suite run adds them to a fresh copy).
PORTABLE_SUITE_PACKAGES=(phpunit php-predis php-symfony-lock php-symfony-semaphore redis-server redis-tools libfcgi-bin procps openssl)

ensure_php85_root() {
  bash "$ROOT_TOOL" ensure --experimental php85 sid \
    php8.5-cli/experimental php8.5-dev/experimental php8.5-fpm/experimental php8.5-xml/experimental \
    php8.5-mbstring/experimental php-common/sid "${PORTABLE_SUITE_PACKAGES[@]}" \
    libclang-dev clang make pkg-config ca-certificates dpkg-dev binutils
}

ensure_cross_root() {
  bash "$ROOT_TOOL" ensure --experimental --multiarch=arm64 cross sid \
    rustc cargo libstd-rust-dev:arm64 gcc-aarch64-linux-gnu libc6-dev:arm64 libgcc-s1:arm64 \
    libclang-dev clang make ca-certificates dpkg-dev binutils-aarch64-linux-gnu php8.5-cli:arm64/experimental
}

# php-common/sid: experimental's php-common (2:102~) Breaks the php8.5-common it ships beside; sid's goes with it.
ensure_php85_clean_root() {
  bash "$ROOT_TOOL" ensure --experimental php85-php sid \
    php8.5-cli/experimental php8.5-fpm/experimental php-common/sid
}

# What the arm64 suite run adds to a copy of debian13-arm64-php (scripts/test-arm64.sh).
ARM64_SUITE_PACKAGES=(php-redis php-xml php-mbstring "${PORTABLE_SUITE_PACKAGES[@]}")

# ensure_arm64_php_root NAME SUITE: a clean arm64 Debian with PHP's CLI, nothing else, and FPM where the arm64 suite
# runs php-fpm (Debian 13: PhpFpmTest is in the portable subset). Debian 12's arm64 root serves the PHP 8.2 build
# (`php -i`, the -dev package) and make test-dist's package checks, which there check the CLI: under qemu, configuring
# php-fpm and enabling each of php-common's 17 modules for a second SAPI is minutes of CPU (php8.2-common's
# configuration alone took 285 s in a CI run), for package scripts that make test-dist checks with FPM on x86_64.
ensure_arm64_php_root() {
  local sapis=(php-cli)
  [ "$2" = trixie ] && sapis+=(php-fpm)
  bash "$ROOT_TOOL" ensure --arch=arm64 "$1" "$2" "${sapis[@]}"
}
