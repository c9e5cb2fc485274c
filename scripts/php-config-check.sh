#!/usr/bin/env bash
# Runs inside a fresh copy of the Debian 13 build root with a second PHP in /usr/local (scripts/test-dist.sh):
# PHP_CONFIG picks that PHP over Debian's for the build and for make install / make uninstall.
set -euo pipefail
cd "$(dirname "$0")/.."
export PHP_CONFIG=/usr/local/bin/php-config CARGO_TARGET_DIR=$PWD/target/php-config-check
fail() { echo "php-config-check: FAIL: $*" >&2; exit 1; }
[ "$(bash scripts/php-binary.sh)" = /usr/local/bin/php ] || fail "php-binary.sh did not pick the php beside PHP_CONFIG"
# The third-party crates from this root's own build (make test-debian13's); what PHP_CONFIG changes is rebuilt.
bash scripts/seed-target.sh "$CARGO_TARGET_DIR" "$PWD/target/debian13"
make build >/dev/null || fail "make build"
so=$CARGO_TARGET_DIR/release/libdeadbolt.so
# Built against the /usr/local PHP's headers: it loads there (and says so), whatever Debian's PHP is.
/usr/local/bin/php -n -d extension="$so" -r 'exit(extension_loaded("deadbolt") ? 0 : 1);' \
  || fail "the PHP_CONFIG build does not load into /usr/local/bin/php"
make install || fail "make install"
/usr/local/bin/php -m | grep -x deadbolt >/dev/null || fail "/usr/local/bin/php -m does not list deadbolt after make install"
if /usr/bin/php -m 2>/dev/null | grep -x deadbolt >/dev/null; then fail "Debian's /usr/bin/php loads deadbolt: make install went to the wrong PHP"; fi
echo "php-config-check: PHP_CONFIG=$PHP_CONFIG: built for $(/usr/local/bin/php -n -r 'echo PHP_VERSION;'), installed into it only (Debian's $(/usr/bin/php -n -r 'echo PHP_VERSION;') untouched)"
make uninstall || fail "make uninstall"
if /usr/local/bin/php -m | grep -x deadbolt >/dev/null; then fail "deadbolt still loaded after make uninstall"; fi
echo "php-config-check: PASS"
