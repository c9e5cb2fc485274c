#!/usr/bin/env bash
# Runs PHP with the build tree's extension, never an installed copy:
#
#   scripts/php.sh SO [php arguments...]
#   scripts/php.sh --prepare     # only mirrors the scan directory; prints it (for PHP_INI_SCAN_DIR, e.g. valgrind's php)
#
# PHP reads its usual ini files (so php-redis, posix, pcntl... stay loaded), except any that loads deadbolt: the
# scan directory is mirrored into target/php-conf.d/<digest>/ without them and named by PHP_INI_SCAN_DIR, which child
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
  inis=()
  IFS=: read -r -a dirs <<< "$scan"
  for d in "${dirs[@]}"; do
    [ -d "$d" ] || continue
    for ini in "$d"/*.ini; do
      [ -e "$ini" ] || continue
      grep -qiE '^[[:space:]]*(zend_)?extension[[:space:]]*=[[:space:]]*"?([^"]*/)?(lib)?deadbolt(\.so)?"?[[:space:]]*$' "$ini" && continue
      # Named as in the scan directory: PHP loads them in that order (php-memcached's 25- after msgpack's 20-).
      inis+=("$(basename "$ini")=$(realpath "$ini")")
    done
  done
  # One directory per set of ini files, made aside and renamed into place: runs started at the same moment (the
  # demo starts two) never see a half-made directory.
  key=$(printf '%s\n' "${inis[@]}" | sha256sum | cut -c1-16)
  dir=$conf/$key
  if [ ! -d "$dir" ]; then
    mkdir -p "$conf"
    tmp=$(mktemp -d "$conf/.new.XXXXXX")
    for ini in "${inis[@]}"; do ln -s "${ini#*=}" "$tmp/${ini%%=*}"; done
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"
  fi
  export PHP_INI_SCAN_DIR=$dir DEADBOLT_ISOLATED=1
fi
if [ "$so" = --prepare ]; then echo "$PHP_INI_SCAN_DIR"; exit 0; fi
exec "$php" -d extension="$(realpath "$so")" "$@"
