#!/usr/bin/env bash
# phpredis for a PHP that Debian has no php-redis package for (PHP 8.5 from experimental: sid's php-redis is built
# for 8.4 only): built from the upstream source Debian ships for sid's php-redis (its orig tarball, read through a
# private deb-src list), with that PHP's phpize, as `pecl install redis` would. Prints the path of redis.so; a
# build that exists is reused.
#
#   scripts/phpredis-from-source.sh PHP_CONFIG OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
php_config=${1:?usage: phpredis-from-source.sh PHP_CONFIG OUT_DIR}; out=${2:?usage: phpredis-from-source.sh PHP_CONFIG OUT_DIR}
so=$out/redis.so
[ -f "$so" ] && { echo "$so"; exit 0; }
source scripts/lib/private-apt.sh
work=$(mktemp -d /tmp/phpredis.XXXXXX)
trap 'rm -rf "$work"' EXIT
mirror=${DEBIAN_MIRROR:-$(bash scripts/debian-mirror.sh)}   # the apt sources of this root
private_apt_setup "$work/apt" "deb-src $mirror sid main" -o Acquire::Check-Valid-Until=false
apt-get "${private_apt_opts[@]}" update >&2
# Only the upstream tarball is needed (Debian's packaging of it is not used); apt fetches it first.
(cd "$work" && apt-get "${private_apt_opts[@]}" source --download-only php-redis >&2 2>/dev/null || true)
orig=$(ls "$work"/php-redis_*.orig.tar.gz 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "phpredis-from-source: Debian's php-redis source could not be fetched" >&2; exit 1; }
mkdir -p "$work/src" && tar -xzf "$orig" -C "$work/src"
src=$(dirname "$(find "$work/src" -maxdepth 2 -name config.m4 | head -1)")
phpize=$(dirname "$php_config")/$(basename "$php_config" | sed 's/php-config/phpize/')
# PHP 8.5 dropped ext/standard/php_smart_string.h, long an alias of Zend's zend_smart_string.h, which phpredis 6.2
# (sid's) still includes; phpredis 6.3 includes Zend's header instead. The same alias, on the include path:
mkdir -p "$work/compat/ext/standard"
echo '#include "Zend/zend_smart_string.h"' > "$work/compat/ext/standard/php_smart_string.h"
(cd "$src" && "$phpize" && CPPFLAGS="-I$work/compat" ./configure --with-php-config="$php_config" && make -j"$(nproc)") \
  > "$work/build.log" 2>&1 \
  || { tail -30 "$work/build.log" >&2; exit 1; }
mkdir -p "$out" && cp "$src/modules/redis.so" "$so"
echo "$so"
