#!/usr/bin/env bash
# Builds a thread-safe (ZTS) PHP 8.4 (or 8.2) from upstream source (the orig tarball of Debian 13's php8.4, Debian
# 12's php8.2), configured as the official php:8.x-zts images configure theirs: prefix /usr/local, php.ini in
# /usr/local/etc/php and its scan directory conf.d, --enable-zts --disable-zend-signals, --enable-embed (the SAPI
# FrankenPHP and our thread host are built on), their compiler flags; only what the tests need besides
# (--disable-all, then ctype, pcntl, posix): a few minutes. Staged, never installed here:
#
#   scripts/zts-php.sh               x86_64, built on this machine, into target/zts-php/
#   scripts/zts-php.sh arm64         arm64, cross-compiled in the cross root (sid, the aarch64 GCC), into target/zts-php-arm64/
#   scripts/zts-php.sh x86_64 8.2    PHP 8.2 (Debian 12's source), x86_64, into target/zts-php-8.2/
#
#   <out>/php-zts.tgz      the installed tree, to extract at / in a root (scripts/test-dist.sh installs the -zts
#                          package into it)
#   <out>/root/usr/local   the same tree usable in place (bin/php, lib/libphp.so, and a bin/php-config and bin/phpize
#                          naming the staged tree), for the thread suite and the ZTS builds of the extension
#                          (scripts/test-threads.sh, scripts/build-arm64.sh, make dist)
#
# Cached by its recipe. Prints the in-place directory. The x86_64 tree needs only libc and libm, so one built on Debian
# 12 runs in a Debian 13 root.
set -euo pipefail
cd "$(dirname "$0")/.."
# shellcheck source=lib/php-source.sh
source scripts/lib/php-source.sh
arch=${1:-x86_64} version=${2:-8.4}
case "$arch $version" in
  "x86_64 8.4") out=$PWD/target/zts-php; cross=() ;;
  "arm64 8.4") out=$PWD/target/zts-php-arm64; cross=(--host=aarch64-linux-gnu --build=x86_64-linux-gnu) ;;
  "x86_64 8.2") out=$PWD/target/zts-php-8.2; cross=() ;;
  *) echo "zts-php: x86_64 8.4, arm64 8.4 or x86_64 8.2" >&2; exit 1 ;;
esac
src=$PWD/target/php-src/src; [ "$version" = 8.4 ] || src=$src-$version
stage=$out/root
here=$stage/usr/local
# The images' flags (PHP_IMAGE_FLAGS) and their ZTS options (--enable-zts --disable-zend-signals, as FrankenPHP
# also requires; --enable-embed).
flags=("${PHP_IMAGE_FLAGS[@]}")
configure=(--prefix=/usr/local --with-config-file-path=/usr/local/etc/php
  --with-config-file-scan-dir=/usr/local/etc/php/conf.d --enable-zts --disable-zend-signals --enable-embed
  --disable-all --enable-ctype --enable-pcntl --enable-posix
  --disable-cgi --disable-phpdbg --without-sqlite3 --without-pdo-sqlite --without-libxml --without-pear "${cross[@]}")
recipe="php$version ${configure[*]} ${flags[*]} (in-place php-config, phpize)"

# build: configure, make and stage (run where the compiler is: here, or inside the cross root).
build() {
  local work=$out.build
  rm -rf "$work" "$out"; mkdir -p "$work" "$out"
  tar -xJf "$src"/php"$version"_*.orig.tar.xz -C "$work" --strip-components=1
  (
    cd "$work"
    [ "$arch" = arm64 ] && export CC=aarch64-linux-gnu-gcc
    ./configure "${configure[@]}" "${flags[@]}" > configure.log 2>&1 || { tail -30 configure.log >&2; exit 1; }
    make -j"$(nproc)" > make.log 2>&1 || { tail -30 make.log >&2; exit 1; }
    make install INSTALL_ROOT="$stage" > install.log 2>&1 || { tail -30 install.log >&2; exit 1; }
  )
  rm -rf "$work"
}
if [ "${3:-}" = --inside ]; then build; exit 0; fi

# One build at a time: a second caller waits for the first's, then finds it cached.
mkdir -p target; exec 9> "target/zts-php-$arch-$version.lock"; flock 9
if [ -x "$here/bin/php" ] && [ -f "$out/php-zts.tgz" ] && [ "$(cat "$out/recipe" 2>/dev/null)" = "$recipe" ]; then
  echo "$here"; exit 0
fi
if [ "$arch" = x86_64 ]; then
  need=(gcc libc6-dev make pkg-config xz-utils curl)
  missing=(); for p in "${need[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
  if ((${#missing[@]})); then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  fi
  php_source "$version" "$src" "$(bash scripts/debian-mirror.sh)" "$PWD/scripts/lib/private-apt.sh"
  build
else
  php_source "$version" "$src" "$(bash scripts/debian-mirror.sh)" "$PWD/scripts/lib/private-apt.sh"
  source scripts/lib/roots.sh
  ensure_cross_root >&2
  DEADBOLT_ROOT_NO_TOOLCHAIN=1 bash scripts/debian-root.sh run cross --fresh \
    bash -c 'cd "$1" && bash scripts/zts-php.sh arm64 8.4 --inside' bash "$PWD" >&2
fi
# The scan directory exists, empty, as in the images (docker-php-ext-enable writes there).
mkdir -p "$stage/usr/local/etc/php/conf.d"
tar -czf "$out/php-zts.tgz" -C "$stage" .
# In place, php-config and phpize name the staged tree (the tarball keeps /usr/local).
sed -i "s|^prefix=\"/usr/local\"|prefix=\"$here\"|" "$here/bin/php-config"
sed -i "s|^prefix='/usr/local'|prefix='$here'|" "$here/bin/phpize"
echo "$recipe" > "$out/recipe"
echo "zts-php: PHP $version ZTS, $arch: $here" >&2
echo "$here"
