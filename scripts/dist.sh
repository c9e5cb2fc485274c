#!/usr/bin/env bash
# make dist: binary packages for every PHP this machine builds for, in target/dist/:
#   - the host's PHP (from the host's build, target/release/);
#   - Debian 13's PHP 8.4, built and packaged inside the Debian 13 root (scripts/debian-root.sh; target/debian13/),
#     unless DEADBOLT_DIST_HOST_ONLY=1;
# then SHA256SUMS over every package.
set -euo pipefail
cd "$(dirname "$0")/.."
out=$PWD/target/dist
rm -rf "$out"; mkdir -p "$out"
bash scripts/package.sh target/release/libdeadbolt.so "$out"
if [ "${DEADBOLT_DIST_HOST_ONLY:-0}" != 1 ] && [ "$(. /etc/os-release; echo "$VERSION_CODENAME")" != trixie ]; then
  bash scripts/debian-root.sh ensure debian13 trixie make ca-certificates
  bash scripts/debian-root.sh run debian13 bash -c '
    set -euo pipefail; cd "$1"
    export CARGO_TARGET_DIR=$PWD/target/debian13
    make build >/dev/null
    bash scripts/package.sh target/debian13/release/libdeadbolt.so "$2"
  ' bash "$PWD" "$out"
fi
(cd "$out" && sha256sum -- *.tgz *.deb > SHA256SUMS)
echo "dist: $out"
ls -l "$out"
