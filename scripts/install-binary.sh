#!/usr/bin/env bash
# Installs Deadbolt into a PHP, for every SAPI of it, from a built deadbolt.so or a release tarball
# (php_deadbolt-<version>_php<X.Y>-<x86_64|arm64>-linux-glibc-<nts|zts>.tgz: a thread-safe PHP takes the -zts one),
# and uninstalls exactly what it installed.
# Needs nothing but PHP and coreutils: no compiler, no php-dev. `make install` / `make uninstall` run it too.
#
#   install-binary.sh install FILE.so|FILE.tgz
#   install-binary.sh uninstall
#   install-binary.sh status
#
# The PHP: $PHP (a php binary), else the one beside $PHP_CONFIG, else `php` on PATH.
# Where things go:
#   - the .so: PHP's extension_dir (as `php -r 'echo ini_get("extension_dir");'` reports it);
#   - Debian's PHP (its scan dir is /etc/php/X.Y/<sapi>/conf.d, phpenmod exists): mods-available/deadbolt.ini, for every
#     SAPI with `phpenmod -v X.Y -s ALL` (cli, fpm, apache2... each get their conf.d link);
#   - elsewhere (the official php images, /usr/local builds): docker-php-ext-deadbolt.ini in the scan directory
#     `php --ini` reports, which every SAPI of that PHP reads; this is what docker-php-ext-enable writes.
# Every file it writes, and the way it enabled the module, is listed in <extension_dir>/deadbolt.installed, which
# uninstall reads; it prints each one.
set -euo pipefail

die() { echo "deadbolt install: $*" >&2; exit 1; }
# make_dir DIR: mkdir -p, remembering each directory it created in CREATED (the manifest lists them; uninstall
# removes them, deepest first).
CREATED=()
make_dir() {
  local d=$1 made=()
  while [ ! -d "$d" ]; do made=("$d" "${made[@]}"); d=$(dirname "$d"); done
  for d in "${made[@]}"; do mkdir "$d"; CREATED+=("$d"); done
}
record_dirs() { local d; for d in "${CREATED[@]}"; do echo "dir $d" >> "$manifest"; done; CREATED=(); }
say() { echo "deadbolt install: $*"; }

find_php() {
  if [ -n "${PHP:-}" ]; then
    command -v "$PHP" || die "PHP=$PHP is not an executable"
  elif [ -n "${PHP_CONFIG:-}" ]; then
    local base; base=$(basename "$PHP_CONFIG")
    local php; php="$(dirname "$PHP_CONFIG")/${base/php-config/php}"
    [ -x "$php" ] || die "no php beside PHP_CONFIG=$PHP_CONFIG (looked for $php)"
    echo "$php"
  else
    command -v php || die "no php on PATH (set PHP=/path/to/php)"
  fi
}

php=$(find_php)
# -n: the facts of this PHP binary, whatever its ini files load (an old deadbolt among them).
php_fact() { "$php" -n -r "echo $1;"; }
version=$(php_fact 'PHP_MAJOR_VERSION.".".PHP_MINOR_VERSION')
zts=$(php_fact '(int) PHP_ZTS')
ext_dir=$("$php" -r 'echo ini_get("extension_dir");' 2>/dev/null) || ext_dir=
[ -n "$ext_dir" ] || ext_dir=$(php_fact 'PHP_EXTENSION_DIR')
manifest=$ext_dir/deadbolt.installed

# The ini directory for every SAPI: Debian's mods-available when this is Debian's PHP, else the scan directory.
debian_mods=/etc/php/$version/mods-available
layout() {
  # Debian's own PHP reads /etc/php/X.Y/<sapi>/conf.d; a second PHP of the same version elsewhere (/usr/local) does not,
  # and gets its own scan directory even on Debian.
  local scan; scan=$(php_fact 'PHP_CONFIG_FILE_SCAN_DIR')
  if command -v phpenmod >/dev/null 2>&1 && [ -d "$debian_mods" ] && [ "${scan#/etc/php/"$version"/}" != "$scan" ]; then
    echo debian
  else
    echo scandir
  fi
}
scan_dir() {
  local dirs
  dirs=$("$php" --ini 2>/dev/null | sed -n 's/^Scan for additional .ini files in: *//p')
  [ -n "$dirs" ] && [ "$dirs" != "(none)" ] || die "$php reads no scan directory for extra .ini files \
(php --ini: 'Scan for additional .ini files in: (none)'); add 'extension=deadbolt.so' to its php.ini yourself"
  echo "${dirs%%:*}"
}

do_install() {
  local file=${1:?usage: install-binary.sh install FILE.so|FILE.tgz} so tmp=""
  [ -f "$file" ] || die "no such file: $file"
  if [ -f "$manifest" ]; then
    say "a previous install is recorded in $manifest; removing it first"
    do_uninstall
  fi
  if command -v dpkg >/dev/null 2>&1 && dpkg -S "$ext_dir/deadbolt.so" >/dev/null 2>&1; then
    die "$ext_dir/deadbolt.so belongs to the package $(dpkg -S "$ext_dir/deadbolt.so" | cut -d: -f1); remove that \
package first (apt-get remove), or keep using it"
  fi
  case "$file" in
    *.tgz|*.tar.gz)
      tmp=$(mktemp -d)
      tar -xzf "$file" -C "$tmp"
      so=$(find "$tmp" -name deadbolt.so -type f | head -1)
      [ -n "$so" ] || { rm -rf "$tmp"; die "$file holds no deadbolt.so"; } ;;
    *) so=$file ;;
  esac
  # The module must load into this very PHP before anything is written: a build for another PHP version reports
  # its API mismatch here, in PHP's own words.
  local check
  if ! check=$("$php" -n -d display_errors=stderr -d extension="$(realpath "$so")" \
      -r 'exit(extension_loaded("deadbolt") ? 0 : 1);' 2>&1); then
    [ -n "$tmp" ] && rm -rf "$tmp"
    local want=nts; [ "$zts" = 1 ] && want=zts
    # The thread safety differs: PHP says "build ID=API...,NTS" / ",TS", or the loader misses the other kind's
    # symbols (an NTS module in a ZTS PHP: "undefined symbol: executor_globals"). Name the package that fits.
    case "$check" in
      *"build ID"*|*"symbol: executor_globals"*|*"symbol: compiler_globals"*|*"symbol: tsrm_"*|*"globals_offset"*)
        check="$check (this PHP is ${want^^}: use the *-linux-glibc-$want.tgz for PHP $version)" ;;
    esac
    die "$so does not load into $php (PHP $version): ${check:-extension not loaded}"
  fi
  make_dir "$ext_dir"
  install -m 0644 "$so" "$ext_dir/deadbolt.so"
  [ -n "$tmp" ] && rm -rf "$tmp"
  : > "$manifest"
  record_dirs
  echo "file $ext_dir/deadbolt.so" >> "$manifest"
  say "wrote $ext_dir/deadbolt.so"
  case "$(layout)" in
    debian)
      printf '; Deadbolt: Symfony-Lock-compatible locks, native (installed by install-binary.sh)\n; priority=20\nextension=deadbolt.so\n' \
        > "$debian_mods/deadbolt.ini"
      echo "file $debian_mods/deadbolt.ini" >> "$manifest"
      say "wrote $debian_mods/deadbolt.ini"
      phpenmod -v "$version" -s ALL deadbolt
      echo "phpenmod $version" >> "$manifest"
      local link
      for link in /etc/php/"$version"/*/conf.d/20-deadbolt.ini; do
        [ -e "$link" ] && say "enabled: $link"
      done ;;
    scandir)
      local dir; dir=$(scan_dir)
      make_dir "$dir"
      record_dirs
      printf '; Deadbolt: Symfony-Lock-compatible locks, native (installed by install-binary.sh)\nextension=deadbolt.so\n' \
        > "$dir/docker-php-ext-deadbolt.ini"
      echo "file $dir/docker-php-ext-deadbolt.ini" >> "$manifest"
      say "wrote $dir/docker-php-ext-deadbolt.ini" ;;
  esac
  say "recorded in $manifest"
  if ! "$php" -m 2>/dev/null | grep -x deadbolt >/dev/null; then
    # What PHP said while loading (an "Unable to load dynamic library" names the reason), then the verdict.
    "$php" -m 2>&1 >/dev/null | head -5 | sed 's/^/deadbolt install: php -m said: /' >&2
    die "$php -m does not list deadbolt after the install (php --ini says which files it reads)"
  fi
  say "$php -m lists deadbolt ($("$php" -r 'echo phpversion("deadbolt");'), PHP $version)"
}

do_uninstall() {
  [ -f "$manifest" ] || die "nothing to uninstall: no $manifest (Deadbolt was not installed into $php by this script)"
  local kind arg entries
  entries=$(cat "$manifest")
  # Disable first (phpdismod needs the mods-available ini), then remove the files.
  while read -r kind arg; do
    if [ "$kind" = phpenmod ]; then
      phpdismod -v "$arg" -s ALL deadbolt
      # phpenmod/phpdismod remember the admin's choice; forget it, so that nothing of ours is left.
      rm -f /var/lib/php/modules/"$arg"/*/*_by_admin/deadbolt
      rmdir --ignore-fail-on-non-empty /var/lib/php/modules/"$arg"/*/*_by_admin 2>/dev/null || true
      say "disabled deadbolt for every SAPI of PHP $arg"
    fi
  done < "$manifest"
  while read -r kind arg; do
    if [ "$kind" = file ]; then
      rm -f "$arg"
      say "removed $arg"
    fi
  done < "$manifest"
  rm -f "$manifest"
  say "removed $manifest"
  # Directories it created, deepest first (listed parent before child), if nothing else has moved in since.
  local dirs=()
  while read -r kind arg; do [ "$kind" = dir ] && dirs=("$arg" "${dirs[@]}"); done <<< "$entries"
  for arg in "${dirs[@]}"; do rmdir "$arg" 2>/dev/null && say "removed $arg/"; done
  return 0
}

case "${1:-}" in
  install) do_install "${2:-}" ;;
  uninstall) do_uninstall ;;
  status)
    if [ -f "$manifest" ]; then cat "$manifest"; else echo "not installed by this script into $php"; fi ;;
  *) die "usage: install-binary.sh install FILE.so|FILE.tgz | uninstall | status" ;;
esac
