#!/usr/bin/env bash
# PHP 8.5, x86_64: the php85 root (Debian sid with experimental's PHP 8.5, scripts/lib/roots.sh), the build
# (scripts/build-php85.sh), the demo, and the portable subset (scripts/test-portable.sh) with sid's PHPUnit 13,
# Redis, Predis, symfony/lock 7.4 and phpredis built from source (scripts/phpredis-from-source.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
bash scripts/build-php85.sh
bash scripts/debian-root.sh run php85 bash -c '
  set -euo pipefail; cd "$1"
  export PHP_CONFIG=/usr/bin/php-config8.5 CARGO_TARGET_DIR=$PWD/target/php85
  # phpredis for PHP 8.5 (Debian has none): built from Debian'"'"'s source, loaded through an extra scan directory.
  redis_so=$(bash scripts/phpredis-from-source.sh /usr/bin/php-config8.5 target/php85/phpredis)
  extra=$(mktemp -d); echo "extension=$PWD/$redis_so" > "$extra/20-redis.ini"
  export PHP_INI_SCAN_DIR=/etc/php/8.5/cli/conf.d:$extra
  bash scripts/demo.sh target/php85/release/libdeadbolt.so
  bash scripts/test-portable.sh target/php85/release/libdeadbolt.so target/php85/test-run
' bash "$PWD"
echo "test-php85: passed in $((SECONDS - start)) s"
