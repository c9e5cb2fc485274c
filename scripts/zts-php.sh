#!/usr/bin/env bash
# Builds a thread-safe (ZTS) PHP 8.4 with its embed SAPI (libphp.so) from upstream source into target/zts-php, on
# this machine, for the thread suite (scripts/test-threads.sh): the host that runs PHP threads is our own driver
# (tests/Threads/driver.c), as FrankenPHP is a host of its own. Only what the suite needs is built (--disable-all,
# plus ctype, pcntl and posix): a few minutes. Cached by its recipe; prints the prefix.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$PWD/target/zts-php
recipe="php8.4 zts embed $prefix --disable-all --enable-ctype --enable-pcntl --enable-posix"
if [ -x "$prefix/bin/php" ] && [ "$(cat "$prefix/recipe" 2>/dev/null)" = "$recipe" ]; then echo "$prefix"; exit 0; fi
need=(gcc libc6-dev make pkg-config xz-utils curl)
missing=(); for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# shellcheck source=lib/php-source.sh
source scripts/lib/php-source.sh
php84_source "$PWD/target/php-src/src" "$(bash scripts/debian-mirror.sh)" "$PWD/scripts/lib/private-apt.sh"
build=$PWD/target/zts-php.build
rm -rf "$build" "$prefix"; mkdir -p "$build"
tar -xJf target/php-src/src/php8.4_*.orig.tar.xz -C "$build" --strip-components=1
cd "$build"
./configure --prefix="$prefix" --enable-zts --enable-embed --disable-all --enable-ctype --enable-pcntl \
  --enable-posix --disable-cgi --disable-phpdbg --without-sqlite3 --without-pdo-sqlite --without-libxml \
  --without-pear > configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
make -j"$(nproc)" > make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
make install > install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
cd - >/dev/null
rm -rf "$build"
echo "$recipe" > "$prefix/recipe"
"$prefix/bin/php" -n -v | head -1 >&2
echo "$prefix"
