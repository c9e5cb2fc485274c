#!/usr/bin/env bash
# The portable subset (phpunit.xml.dist's "portable" testsuite: why those tests, there) on this platform's PHP,
# against a private redis-server on a free loopback port. The platforms beyond the host and Debian 13 run this
# instead of every suite: PHP 8.5 (scripts/test-php85.sh) and arm64 under emulation (scripts/test-arm64.sh). The
# slow group (minutes of refreshing after fork) stays with the full suites; DEADBOLT_PORTABLE_EXCLUDE_GROUPS replaces
# that list (the arm64 run also leaves out the "parser" group: PHP's parser does not depend on the architecture).
#
#   scripts/test-portable.sh SO RUN_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
so=${1:?usage: test-portable.sh SO RUN_DIR}; run_dir=${2:?usage: test-portable.sh SO RUN_DIR}
php=$(bash scripts/php-binary.sh)
dir=$run_dir/portable-redis
bash scripts/redis-stop.sh "$dir" >/dev/null 2>&1 || true
port=$(bash scripts/redis-start.sh "$dir")
trap 'bash scripts/redis-stop.sh "$dir"' EXIT
echo "== portable subset: $("$php" -n -r 'echo "PHP ", PHP_VERSION, " ", php_uname("m");'), $(redis-server --version | cut -d' ' -f1-3) on 127.0.0.1:$port"
# One --exclude-group per group: PHPUnit 11 warns about a comma-separated list (and the warning fails the run), 12
# and later refuse it.
excluded=()
IFS=, read -r -a groups <<< "${DEADBOLT_PORTABLE_EXCLUDE_GROUPS:-slow}"
for group in "${groups[@]}"; do excluded+=(--exclude-group "$group"); done
DEADBOLT_REDIS_PORT=$port DEADBOLT_REQUIRE_REDIS=1 bash scripts/phpunit.sh "$so" --testsuite portable "${excluded[@]}"
