#!/usr/bin/env bash
# Starts another build directory from the host's release build, so that a second build (Debian 13's, PHP 8.5's, the
# ZTS one, phpize's) compiles only what differs: Deadbolt's own crates and ext-php-rs, whose bindings come from the
# PHP it is built for. The third-party crates are the same sources built by the same compiler (the host's toolchain,
# bind-mounted into the roots at its own path) with the same flags, so their compiled form is reused as it is; Cargo
# still rebuilds whatever its fingerprints find changed.
#
#   scripts/seed-target.sh TARGET_DIR [FROM]   # copies FROM/release (default: target/release, the host's build) to
#                                              # TARGET_DIR/release, once
#
# Does nothing when TARGET_DIR already has a release build (its own, kept between runs) or when there is no host
# build yet (the build then compiles everything, as it would without this script). .ci/run builds on the host before
# its lanes, so every lane finds one. Why: on CI's two cores each from-scratch build of every crate is about four
# CPU-minutes, and the lanes share those cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$HOME/.cargo/bin:$PATH
dest=${1:?usage: seed-target.sh TARGET_DIR [FROM]}
src=${2:-$PWD/target}/release
[ -f "$src/libdeadbolt.so" ] && [ ! -d "$dest/release" ] || exit 0
mkdir -p "$dest"
rm -rf "$dest/release.tmp"
cp -a "$src" "$dest/release.tmp"
mv "$dest/release.tmp" "$dest/release"
# ext-php-rs reads PHP's headers when it is built, and its build script reruns only when $PHP, $PHP_CONFIG or $PATH
# change: the same /usr/bin/php in a root with another PHP would keep the host's bindings. So it is removed, and with
# it Deadbolt's own crates, which are built on each platform from scratch.
CARGO_TARGET_DIR=$dest cargo clean --release --locked --quiet \
  -p ext-php-rs -p deadbolt -p deadbolt-core -p deadbolt-cli
echo "seed-target: $dest starts from $src (third-party crates only)"
