#!/usr/bin/env bash
# Builds PHP from its upstream source (the orig tarball of Debian 13's php8.4 source package, from Debian's
# registry) inside the Debian 13 root, the way the official php images build theirs, for the package tests:
#
#   scripts/php-from-source.sh nts   # /usr/local: --with-config-file-path=/usr/local/etc/php and the scan dir
#                                    # /usr/local/etc/php/conf.d, as in php:8.4-cli (no phpenmod, no /etc/php)
#
# (The thread-safe PHP, as php:8.4-zts, is scripts/zts-php.sh's: built on the host, where the thread suite uses it.)
#
# Prints the path of a tarball of the installed tree (extract it at / in a root). Cached in target/php-src/ by
# its recipe. Only the extensions the tests need are built (--disable-all --enable-ctype): minutes, not tens.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: php-from-source.sh nts}
case "$kind" in
  nts) prefix=/usr/local; flags=(--with-config-file-path=/usr/local/etc/php
         --with-config-file-scan-dir=/usr/local/etc/php/conf.d) ;;
  *) echo "php-from-source: nts only (a ZTS PHP: scripts/zts-php.sh)" >&2; exit 1 ;;
esac
# shellcheck source=lib/php-source.sh
source scripts/lib/php-source.sh
flags+=("${PHP_IMAGE_FLAGS[@]}")   # the images' compiler flags
out=$PWD/target/php-src
mkdir -p "$out"
recipe="php8.4 $kind $prefix ${flags[*]} --disable-all --enable-ctype"
tgz=$out/php-$kind.tgz
if [ -f "$tgz" ] && [ "$(cat "$out/php-$kind.recipe" 2>/dev/null)" = "$recipe" ]; then echo "$tgz"; exit 0; fi

bash scripts/debian-root.sh ensure debian13 trixie make ca-certificates >&2
# In a throw-away copy: no lock to wait for while make test-debian13 runs in the root (.ci/run does both at once).
bash scripts/debian-root.sh run debian13 --fresh bash -c '
  set -euo pipefail
  out=$1 kind=$2 prefix=$3 lib=$4 source_lib=$5; shift 5
  export DEBIAN_FRONTEND=noninteractive
  need=(gcc libc6-dev make pkg-config xz-utils curl)
  missing=(); for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  ((${#missing[@]} == 0)) || { apt-get update -qq; apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null; }
  src=$out/src
  mirror=$(sed -n "s/^deb \(\S*\) trixie main$/\1/p" /etc/apt/sources.list | head -1)
  source "$source_lib"
  php_source 8.4 "$src" "$mirror" "$lib"
  build=/tmp/php-build; rm -rf "$build"; mkdir -p "$build"
  tar -xJf "$src"/php8.4_*.orig.tar.xz -C "$build" --strip-components=1
  cd "$build"
  ./configure --prefix="$prefix" "$@" --disable-all --enable-ctype --disable-cgi --disable-phpdbg \
    --without-sqlite3 --without-pdo-sqlite --without-libxml --without-pear > configure.log 2>&1 \
    || { tail -30 configure.log; exit 1; }
  make -j"$(nproc)" > make.log 2>&1 || { tail -30 make.log; exit 1; }
  rm -rf /tmp/php-stage; make install INSTALL_ROOT=/tmp/php-stage > install.log 2>&1 || { tail -30 install.log; exit 1; }
  # The scan directory exists, empty, as in the images (docker-php-ext-enable writes there).
  scan=$(/tmp/php-stage"$prefix"/bin/php -n -r "echo PHP_CONFIG_FILE_SCAN_DIR;")
  mkdir -p /tmp/php-stage"$scan"
  tar -czf "$out/php-$kind.tgz" -C /tmp/php-stage .
  /tmp/php-stage"$prefix"/bin/php -n -v | head -1
 ' bash "$out" "$kind" "$prefix" "$PWD/scripts/lib/private-apt.sh" "$PWD/scripts/lib/php-source.sh" \
  "${flags[@]}" >&2
echo "$recipe" > "$out/php-$kind.recipe"
echo "$tgz"
