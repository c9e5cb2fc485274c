#!/usr/bin/env bash
# make test on the second platform: a Debian 13 (trixie) root under target/roots/debian13, made by debootstrap from
# Debian's registry and cached between runs. Inside it, `make test` installs Debian 13's own PHP 8.4, PHPUnit 11.5,
# Redis 8.0, Valkey, php-redis, Predis and symfony/lock 6.4 (scripts/bootstrap.sh), builds the project with the
# host's Rust toolchain (bind-mounted) into target/debian13/ (the third-party crates from the host's build when
# there is one: scripts/seed-target.sh), runs the demo and every suite (clippy only on the host; the engine's tests
# from the host's test build, against Debian 13's servers),
# again against Valkey (scripts/test-php.sh says which), and the interop suites once more with symfony/lock 7.4
# unpacked from Debian sid.
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
# First thing: .ci/run's host lane soon builds in target/ beside this copy (a file copied while being written is only
# rebuilt: Cargo records a unit as built after its files are).
bash scripts/seed-target.sh target/debian13
bash scripts/debian-root.sh ensure debian13 trixie make ca-certificates
bash scripts/debian-root.sh run debian13 bash -c '
  set -euo pipefail
  cd "$1"
  autoload=$(bash scripts/symfony-lock-sid.sh target/debian13/symfony-lock-7.4)
  # Two Deadbolt versions on one Redis (tests/Versions) run on the host only: the earlier version would be one more
  # build of the extension here, for what PHP 8.4 does not change (the scripts and the data they share).
  export CARGO_TARGET_DIR=$PWD/target/debian13 DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD=$autoload DEADBOLT_PREVIOUS=no
  make demo
  # Clippy once, on the host: the same compiler (the host toolchain, bind-mounted) and the same sources give the
  # same verdict; what Debian 13 changes (PHP 8.4 headers) the builds and suites here cover.
  # make test CLIPPY=no THREADS=no, one part at a time, each with its time.
  # The engine'"'"'s tests (no PHP in them) are the host'"'"'s test build, run here against Debian 13'"'"'s servers: the same
  # compiler (bind-mounted) and the same sources build the same binaries, so they are not built again (CI: make
  # build-tests made them before the lanes; standalone, cargo builds them into the host'"'"'s target/ once).
  for part in $(make -s test-parts THREADS=no); do
    TIMEFORMAT="test-debian13: make $part: %0R s (CPU: %0U s user, %0S s system)"
    if [ "$part" = test-rust ]; then
      time CARGO_TARGET_DIR=$PWD/target make test-rust
    else
      time make "$part" CLIPPY=no THREADS=no
    fi
  done
' bash "$PWD"
echo "test-debian13: passed in $((SECONDS - start)) s"
