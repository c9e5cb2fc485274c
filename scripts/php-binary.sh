#!/usr/bin/env bash
# Prints the PHP binary the project builds for and tests with: the one beside $PHP_CONFIG when that is set
# (/usr/bin/php-config8.3 -> /usr/bin/php8.3, /usr/local/bin/php-config -> /usr/local/bin/php), else `php` on PATH.
set -euo pipefail
if [ -n "${PHP_CONFIG:-}" ]; then
  [ -x "$PHP_CONFIG" ] || { echo "php-binary: PHP_CONFIG=$PHP_CONFIG is not an executable php-config" >&2; exit 1; }
  dir=$(dirname "$PHP_CONFIG"); base=$(basename "$PHP_CONFIG")
  php="$dir/${base/php-config/php}"
  [ -x "$php" ] || { echo "php-binary: no php beside PHP_CONFIG (looked for $php)" >&2; exit 1; }
  echo "$php"
else
  command -v php || { echo "php-binary: no php on PATH (run scripts/bootstrap.sh, or set PHP_CONFIG)" >&2; exit 1; }
fi
