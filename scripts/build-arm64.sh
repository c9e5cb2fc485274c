#!/usr/bin/env bash
# The arm64 builds: one cross-compilation per PHP version, on this x86_64 machine, in the `cross` root
# (scripts/lib/roots.sh says why there). For each PHP the build reads what that arm64 PHP says of itself:
#   - `php -i` of the real arm64 PHP, run under qemu in its own root (ext-php-rs's build reads the API version,
#     thread safety and debug build from it);
#   - its headers, from the arm64 php<X.Y>-dev package of its own suite, unpacked (not installed: the test roots
#     stay clean), with a php-config that points into them.
#
#   scripts/build-arm64.sh [8.2|8.4|8.5|8.4-zts ...]     # default: 8.2 8.4 8.5
#
# 8.4-zts is the thread-safe PHP 8.4 that scripts/zts-php.sh cross-compiles (configured as php:8.4-zts): its headers
# and `php -i` (run under qemu in the cross root) describe it; make zts-extra (scripts/zts-extra.sh) packages and
# checks it. Built without the `helgrind` feature (the cross root has no valgrind headers, and no helgrind runs on
# arm64 here): the same code, with no announcements to valgrind.
#
# writes target/arm64/php<X.Y>/libdeadbolt.so and target/arm64/php<X.Y>/facts (phpver, api, zts, arch), from one
# CARGO_TARGET_DIR (target/arm64/build): the crates are built once for the target, only ext-php-rs and Deadbolt
# again for each PHP.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
out=$PWD/target/arm64
versions=("$@")
((${#versions[@]})) || versions=(8.2 8.4 8.5)
export DEADBOLT_ROOT_NO_TOOLCHAIN=1   # the cross root's own Rust, not the host's

# root_for X.Y: the root whose arm64 PHP is that version, and its Debian suite (sid: the PHP is experimental's).
root_for() {
  case "$1" in
    8.2) echo "debian12-arm64-php bookworm" ;;
    8.4) echo "debian13-arm64-php trixie" ;;
    8.5) echo "cross sid" ;;
    *) echo "build-arm64: no arm64 PHP $1 here (8.2, 8.4, 8.5, 8.4-zts)" >&2; return 1 ;;
  esac
}

# describe X.Y: php -i, the facts and the unpacked -dev package of that arm64 PHP, into $out/php<X.Y>/.
describe() {
  local ver=$1 name suite dir=$out/php$1
  read -r name suite <<< "$(root_for "$ver")"
  case "$name" in
    cross) ensure_cross_root ;;
    *) ensure_arm64_php_root "$name" "$suite" ;;
  esac
  rm -rf "$dir"; mkdir -p "$dir/dev"
  # In a throw-away copy: apt-get download leaves the root as it was.
  bash scripts/debian-root.sh run "$name" --fresh bash -c '
    set -euo pipefail
    cd "$1"; php=/usr/bin/php$2
    "$php" -i > php-i.txt
    "$php" -n -r "echo \"phpver=\", PHP_MAJOR_VERSION, \".\", PHP_MINOR_VERSION, \"\\napi=\", basename(PHP_EXTENSION_DIR), \"\\nzts=\", (int) PHP_ZTS, \"\\n\";" > facts
    echo arch=arm64 >> facts
    release=""; [ "$3" = sid ] && release=/experimental
    apt-get download -qq "php$2-dev:arm64$release" 2>/dev/null
  ' bash "$dir" "$ver" "$suite"
  grep -q "^phpver=$ver$" "$dir/facts" || { echo "build-arm64: $name's PHP is not $ver: $(cat "$dir/facts")" >&2; exit 1; }
  dpkg-deb -x "$dir"/php"$ver"-dev_*_arm64.deb "$dir/dev"
  rm -f "$dir"/php"$ver"-dev_*_arm64.deb
  cat > "$dir/php-config" <<WRAP
#!/bin/sh
# php-config of the arm64 php$ver-dev package, with its headers where they were unpacked (scripts/build-arm64.sh)
sed 's|^prefix=.*|prefix="$dir/dev/usr"|; s|="/usr/include|="$dir/dev/usr/include|g' '$dir/dev/usr/bin/php-config$ver' | sh -s -- "\$@"
WRAP
  answer_php_i "$dir" "$ver"
}

# answer_php_i DIR VERSION: ext-php-rs's build asks `$PHP -i` (and `$PHP_CONFIG --includes`): a php that answers -i as
# the arm64 PHP printed it.
answer_php_i() {
  cat > "$1/php" <<WRAP
#!/bin/sh
# php -i of the arm64 PHP $2, as it printed it (scripts/build-arm64.sh)
[ "\$1" = -i ] || { echo "only -i is answered here" >&2; exit 1; }
cat '$1/php-i.txt'
WRAP
  chmod 0755 "$1/php" "$1/php-config"
}

# describe_zts: the same for the thread-safe PHP 8.4 of scripts/zts-php.sh arm64, whose staged tree has the headers
# and an in-place php-config.
describe_zts() {
  local dir=$out/php8.4-zts here
  here=$(bash scripts/zts-php.sh arm64)
  rm -rf "$dir"; mkdir -p "$dir"
  bash scripts/debian-root.sh run cross --fresh bash -c '
    set -euo pipefail
    cd "$1"; php=$2/bin/php
    "$php" -i > php-i.txt
    "$php" -n -r "echo \"phpver=\", PHP_MAJOR_VERSION, \".\", PHP_MINOR_VERSION, \"\\napi=\", basename(PHP_EXTENSION_DIR), \"\\nzts=\", (int) PHP_ZTS, \"\\n\";" > facts
    echo arch=arm64 >> facts
  ' bash "$dir" "$here"
  grep -q '^zts=1$' "$dir/facts" || { echo "build-arm64: $here/bin/php is not thread-safe: $(cat "$dir/facts")" >&2; exit 1; }
  ln -sf "$here/bin/php-config" "$dir/php-config"
  answer_php_i "$dir" 8.4-zts
}

# A .so newer than every source it is built from is kept: the three PHPs share one target directory, where cargo
# would rebuild ext-php-rs and Deadbolt at every switch of PHP, so a second make dist or the arm64 tests after it
# would compile them again for nothing.
fresh() {
  local so=$out/php$1/libdeadbolt.so
  [ -f "$so" ] && [ -f "$out/php$1/facts" ] && [ -z "$(find Cargo.toml Cargo.lock build.rs src core -newer "$so" -print -quit)" ]
}
todo=()
for ver in "${versions[@]}"; do
  if fresh "$ver"; then echo "build-arm64: PHP $ver: $out/php$ver/libdeadbolt.so is up to date"; else todo+=("$ver"); fi
done
((${#todo[@]})) || exit 0
for ver in "${todo[@]}"; do
  if [ "$ver" = 8.4-zts ]; then describe_zts; else describe "$ver"; fi
done

ensure_cross_root
bash scripts/debian-root.sh run cross bash -c '
  set -euo pipefail
  cd "$1"; out=$2; shift 2
  export CARGO_TARGET_DIR=$out/build CARGO_TARGET_AARCH64_UNKNOWN_LINUX_GNU_LINKER=aarch64-linux-gnu-gcc \
    CC_aarch64_unknown_linux_gnu=aarch64-linux-gnu-gcc AR_aarch64_unknown_linux_gnu=aarch64-linux-gnu-ar
  for ver in "$@"; do
    echo "build-arm64: PHP $ver ($(cargo --version))"
    PHP=$out/php$ver/php PHP_CONFIG=$out/php$ver/php-config \
      cargo build --release --locked --target aarch64-unknown-linux-gnu
    cp "$CARGO_TARGET_DIR/aarch64-unknown-linux-gnu/release/libdeadbolt.so" "$out/php$ver/libdeadbolt.so"
  done
' bash "$PWD" "$out" "${todo[@]}"
for ver in "${todo[@]}"; do echo "build-arm64: $out/php$ver/libdeadbolt.so"; done
