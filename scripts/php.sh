#!/usr/bin/env bash
# Runs PHP with the build tree's extension, never an installed copy:
#
#   scripts/php.sh SO [php arguments...]
#   scripts/php.sh --prepare     # only mirrors the scan directory; prints it (for PHP_INI_SCAN_DIR, e.g. valgrind's php)
#
# PHP reads its usual ini files (so php-redis, posix, pcntl... stay loaded), except any that loads deadbolt: the
# scan directory is mirrored into target/php-conf.d without them and named by PHP_INI_SCAN_DIR, which child
# processes (the tests' php and php-fpm children) inherit. Without this, after `make install` every
# `php -d extension=target/...` run loaded the installed .so instead and only warned "Module already loaded".
set -euo pipefail
so=${1:?usage: php.sh path/to/libdeadbolt.so [php arguments...] | --prepare}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
php=$(bash "$root/scripts/php-binary.sh")
conf=${CARGO_TARGET_DIR:-$root/target}/php-conf.d
if [ -z "${DEADBOLT_ISOLATED:-}" ]; then
  scan=$("$php" -n -r 'echo PHP_CONFIG_FILE_SCAN_DIR;')
  [ -n "${PHP_INI_SCAN_DIR:-}" ] && scan=$PHP_INI_SCAN_DIR
  rm -rf "$conf"; mkdir -p "$conf"
  IFS=: read -r -a dirs <<< "$scan"
  for d in "${dirs[@]}"; do
    [ -d "$d" ] && [ "$d" != "(none)" ] || continue
    for ini in "$d"/*.ini; do
      [ -e "$ini" ] || continue
      grep -qiE '^[[:space:]]*(zend_)?extension[[:space:]]*=[[:space:]]*"?([^"]*/)?(lib)?deadbolt(\.so)?"?[[:space:]]*$' "$ini" && continue
      ln -sf "$(realpath "$ini")" "$conf/$(basename "$ini")"
    done
  done
  export PHP_INI_SCAN_DIR=$conf DEADBOLT_ISOLATED=1
fi
if [ "$so" = --prepare ]; then echo "$PHP_INI_SCAN_DIR"; exit 0; fi
exec "$php" -d extension="$(realpath "$so")" "$@"
