#!/usr/bin/env bash
# Starts another build directory from the host's build, so that a second build (Debian 13's, PHP 8.5's, the ZTS
# one, phpize's) compiles only what differs: Deadbolt's own crates and ext-php-rs, whose bindings come from the PHP
# it is built for. The third-party crates are the same sources built by the same compiler (the host's toolchain,
# bind-mounted into the roots at its own path) with the same flags, so their compiled form is reused as it is; Cargo
# still rebuilds whatever its fingerprints find changed.
#
#   scripts/seed-target.sh TARGET_DIR [FROM]
#       copies FROM/release (default FROM: target, the host's build) to TARGET_DIR/release, once (the engine's test
#       build needs no copy: Debian 13 runs the host's, make test-rust)
#
# Does nothing when TARGET_DIR already has a release build (its own, kept between runs) or FROM has none (the
# build then compiles everything, as it would without this script). .ci/run builds on the host before its lanes, so
# every lane finds one. Why: on CI's two cores a from-scratch build of every crate is about four CPU-minutes, and
# the lanes share those cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$HOME/.cargo/bin:$PATH
dest=${1:?usage: seed-target.sh TARGET_DIR [FROM]}
from=${2:-$PWD/target}

# FROM/release to TARGET_DIR/release when only FROM has it (FROM/release/.fingerprint says a build ran).
seed() {
  local dir=release
  [ -d "$from/$dir/.fingerprint" ] && [ ! -d "$dest/$dir" ] || return 0
  mkdir -p "$dest"
  rm -rf "$dest/$dir.tmp"
  cp -a "$from/$dir" "$dest/$dir.tmp"
  mv "$dest/$dir.tmp" "$dest/$dir"
  # ext-php-rs reads PHP's headers when it is built, and its build script reruns only when $PHP, $PHP_CONFIG or
  # $PATH change: the same /usr/bin/php in a root with another PHP would keep the host's bindings. So it is
  # removed, and with it Deadbolt's own crates, which are built on each platform from scratch.
  CARGO_TARGET_DIR=$dest cargo clean --release --locked --quiet -p ext-php-rs -p deadbolt -p deadbolt-core -p deadbolt-cli
  echo "seed-target: $dest/$dir starts from $from/$dir (third-party crates only)"
}
seed
