#!/usr/bin/env bash
# symfony/semaphore's own store tests (AbstractStoreTestCase, AbstractRedisStoreTestCase, RedisStoreTest,
# PredisStoreTest), from the Debian source of this platform's Symfony (read through a private deb-src list; never
# committed here), changed mechanically to run against Deadbolt: the Key, the exceptions and the store interface are
# Deadbolt's (`use` lines), and the store they build is `new Deadbolt\Semaphore\SemaphoreStore(new
# Deadbolt\Store\RedisStore($connection))`. Nothing else changes: not the namespace (a test's expected message holds
# __METHOD__), not a test. RedisArrayStoreTest and RedisClusterStoreTest are left out (Deadbolt takes no \RedisArray;
# a cluster has suites of its own here). Prints the directory of the tests; a directory that exists is reused.
#
#   scripts/symfony-semaphore-tests.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: symfony-semaphore-tests.sh OUT_DIR}
[ -f "$out/RedisStoreTest.php" ] && { echo "$out"; exit 0; }
source scripts/lib/private-apt.sh
work=$(mktemp -d /tmp/symfony-semaphore-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
mirror=${DEBIAN_MIRROR:-$(bash scripts/debian-mirror.sh)}
release=$(. /etc/os-release && echo "$VERSION_CODENAME")
private_apt_setup "$work/apt" "deb-src $mirror $release main"
apt-get "${private_apt_opts[@]}" update >&2
(cd "$work" && apt-get "${private_apt_opts[@]}" source --download-only symfony >&2 2>/dev/null || true)
orig=$(ls "$work"/symfony_*.orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "symfony-semaphore-tests: Debian's symfony source could not be fetched" >&2; exit 1; }
tar -xf "$orig" -C "$work" --wildcards '*/Component/Semaphore/Tests/Store/*'
src=$(dirname "$(find "$work" -path '*/Component/Semaphore/Tests/Store/AbstractStoreTestCase.php' | head -1)")
mkdir -p "$out.tmp"
for test in AbstractStoreTestCase AbstractRedisStoreTestCase RedisStoreTest PredisStoreTest; do
  sed -e 's/^use Symfony\\Component\\Semaphore\\Exception\\/use Deadbolt\\Semaphore\\Exception\\/' \
      -e 's/^use Symfony\\Component\\Semaphore\\Key;/use Deadbolt\\Semaphore\\Key;/' \
      -e 's/^use Symfony\\Component\\Semaphore\\PersistingStoreInterface;/use Deadbolt\\Semaphore\\PersistingStoreInterface;/' \
      -e 's/^use Symfony\\Component\\Semaphore\\Store\\RedisStore;/use Deadbolt\\Semaphore\\SemaphoreStore;/' \
      -e 's/new RedisStore(\$this->getRedisConnection())/new SemaphoreStore(new \\Deadbolt\\Store\\RedisStore($this->getRedisConnection()))/' \
      "$src/$test.php" > "$out.tmp/$test.php"
done
grep -q 'new SemaphoreStore(new \\Deadbolt\\Store\\RedisStore' "$out.tmp/AbstractRedisStoreTestCase.php" \
  || { echo "symfony-semaphore-tests: the store these tests build was not found (a new Symfony layout?)" >&2; exit 1; }
echo "symfony/semaphore $(basename "$orig" | sed 's/^symfony_\([^+]*\).*/\1/') (Debian $release)" > "$out.tmp/VERSION"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
