#!/usr/bin/env bash
# Builds the extension of an earlier Deadbolt version for this PHP, for the mixed-fleet suite (tests/Versions): a
# fleet that upgrades one worker at a time runs two Deadbolt versions on one Redis at once, each with its own scripts,
# and they must share locks, queues and hand-overs. Prints the path of the built .so.
#
#   scripts/previous-build.sh [REF]
#       REF (default: $DEADBOLT_PREVIOUS_REF, else PREVIOUS below) is exported with git archive into
#       target/previous/<commit>/src and built there with the host's toolchain, starting from the host's compiled
#       third-party crates (scripts/seed-target.sh); a second call finds the build and only prints its path.
#
# PREVIOUS is the last landed version whose Redis scripts differ from today's (the hand-over's calls were trimmed
# after it). Move it forward when a landed version changes the scripts again, so the suite keeps comparing with what
# runs in the field.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=$HOME/.cargo/bin:$PATH
PREVIOUS=c495e669e6631325569ad6195b52becaa878114a
ref=${1:-${DEADBOLT_PREVIOUS_REF:-$PREVIOUS}}

commit=$(git rev-parse --verify --quiet "$ref^{commit}") || {
  echo "previous-build: $ref is not a commit of this clone (a shallow clone lacks it: git fetch --unshallow)" >&2
  exit 1
}
dir=$PWD/target/previous/$commit
so=$dir/libdeadbolt.so
if [ ! -f "$so" ]; then
  rm -rf "$dir/src"
  mkdir -p "$dir/src"
  git archive "$commit" | tar -x -C "$dir/src"
  bash scripts/seed-target.sh "$dir/src/target" "$PWD/target" >&2
  (cd "$dir/src" && PHP=$(bash scripts/php-binary.sh) cargo build --release --locked --quiet -p deadbolt >&2)
  cp "$dir/src/target/release/libdeadbolt.so" "$so.tmp"
  mv "$so.tmp" "$so"
fi
echo "$so"
