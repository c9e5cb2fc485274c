#!/usr/bin/env bash
# Inside a throw-away Debian root (scripts/test-dist.sh): rearranges its PHP into the layout of the official
# php:8.x images, as far as an installer can see it:
#   /usr/local/bin/php                         the CLI (Debian's php binary, told where its ini files are)
#   /usr/local/etc/php/php.ini                 the php.ini (PHPRC), with extension_dir set to
#   /usr/local/lib/php/extensions/no-debug-non-zts-<API>/
#   /usr/local/etc/php/conf.d                  the scan directory every SAPI reads (PHP_INI_SCAN_DIR)
#   no /etc/php, no phpenmod/phpdismod         nothing Debian-specific to lean on
# The official images cannot be pulled here (no registry but Debian's); this is what `php --ini`, ini_get and the
# filesystem show an installer there.
set -euo pipefail
api=$(basename "$(php -n -r 'echo PHP_EXTENSION_DIR;')")
real=$(readlink -f "$(command -v php)")
ext_dir=/usr/local/lib/php/extensions/no-debug-non-zts-$api
mkdir -p /usr/local/etc/php/conf.d "$ext_dir" /usr/local/bin
# The extensions Debian's PHP loads from its own conf.d (they are shared modules there, built in in the image).
for ini in /etc/php/*/cli/conf.d/*.ini; do
  sed -n 's/^extension=\(.*\)$/\1/p' "$ini" | while read -r so; do
    [ -f "/usr/lib/php/$api/${so%.so}.so" ] && cp "/usr/lib/php/$api/${so%.so}.so" "$ext_dir/"
    echo "extension=${so%.so}.so" > "/usr/local/etc/php/conf.d/docker-php-ext-${so%.so}.ini"
  done
done
printf 'extension_dir = "%s"\n' "$ext_dir" > /usr/local/etc/php/php.ini
printf '#!/bin/sh\nPHPRC=/usr/local/etc/php PHP_INI_SCAN_DIR=/usr/local/etc/php/conf.d exec %s "$@"\n' "$real" \
  > /usr/local/bin/php
chmod 0755 /usr/local/bin/php
rm -rf /etc/php /usr/sbin/phpenmod /usr/sbin/phpdismod /usr/sbin/phpquery /usr/sbin/php-fpm* /usr/bin/php
echo "usr-local-layout: $(/usr/local/bin/php --ini | head -3 | tr '\n' ';')"
