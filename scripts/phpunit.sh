#!/usr/bin/env bash
# Runs PHPUnit on the build tree's extension (scripts/php.sh), with the configuration for the PHPUnit at hand:
# phpunit.xml.dist for PHPUnit 10 and later (Debian 13: 11.5), phpunit9.xml.dist for 9.6 (Debian 12).
#
#   scripts/phpunit.sh SO [phpunit arguments...]     # PHPUNIT=/path/to/phpunit picks another runner
#   scripts/phpunit.sh --config                      # prints the configuration file for this PHPUnit
set -euo pipefail
so=${1:?usage: phpunit.sh path/to/libdeadbolt.so [phpunit arguments...]}; shift
root=$(cd "$(dirname "$0")/.." && pwd)
phpunit=${PHPUNIT:-$(command -v phpunit || echo /usr/bin/phpunit)}
php=$(bash "$root/scripts/php-binary.sh")
major=$("$php" "$phpunit" --version 2>/dev/null | sed -n 's/^PHPUnit \([0-9]*\)\..*/\1/p' | head -1)
[ -n "$major" ] || { echo "phpunit.sh: cannot run $phpunit (install Debian's phpunit)" >&2; exit 1; }
config=$root/phpunit.xml.dist
[ "$major" -lt 10 ] && config=$root/phpunit9.xml.dist
if [ "$so" = --config ]; then echo "$config"; exit 0; fi
# No result cache: runs of several platforms at once (.ci/run) share the checkout, and nothing here reorders by it.
# PHPUnit 13 renamed the option (the old name is deprecated there, which this configuration fails on).
no_cache=--do-not-cache-result
[ "$major" -lt 13 ] || no_cache=--do-not-record-test-run-history
DEADBOLT_SO=$(realpath "$so") exec bash "$root/scripts/php.sh" "$so" "$phpunit" -c "$config" "$no_cache" "$@"
