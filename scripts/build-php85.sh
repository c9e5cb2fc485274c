#!/usr/bin/env bash
# The PHP 8.5 build: in the php85 root (Debian sid with experimental's PHP 8.5, scripts/lib/roots.sh), with the
# host's Rust toolchain (bind-mounted), into target/php85/ (the third-party crates from the host's build when there
# is one: scripts/seed-target.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
ensure_php85_root
bash scripts/seed-target.sh target/php85
bash scripts/debian-root.sh run php85 bash -c 'cd "$1" && CARGO_TARGET_DIR=$PWD/target/php85 \
  PHP=/usr/bin/php8.5 PHP_CONFIG=/usr/bin/php-config8.5 cargo build --release --locked' bash "$PWD"
