#!/usr/bin/env bash
# symfony/semaphore's and symfony/lock's own store tests, from the Debian source of this platform's Symfony (read
# through a private deb-src list; never committed here), changed mechanically to run against Deadbolt: the Key, the
# exceptions and the store interfaces are Deadbolt's (`use` lines), and the store they build is Deadbolt's. Nothing
# else changes: not the namespace (a test's expected message holds __METHOD__), not a test; but an expected message
# that names symfony/lock's store class names Deadbolt's (PostgreSqlStoreTest::testInvalidDriver).
#   OUT_DIR/semaphore: AbstractStoreTestCase, AbstractRedisStoreTestCase, RedisStoreTest, PredisStoreTest, building
#     `new Deadbolt\Semaphore\SemaphoreStore(new Deadbolt\Store\RedisStore($connection))`. RedisArrayStoreTest and
#     RedisClusterStoreTest are left out (Deadbolt takes no \RedisArray; a cluster has suites of its own here).
#   OUT_DIR/lock: AbstractStoreTestCase, BlockingStoreTestTrait, ExpiringStoreTestTrait, UnserializableTestTrait,
#     SharedLockStoreTestTrait, SemaphoreStoreTest, MemcachedStoreTest, PostgreSqlStoreTest and PdoStoreTest, building
#     `new Deadbolt\Store\SemaphoreStore()`, `new Deadbolt\Store\MemcachedStore($memcached)` (its \Memcached on
#     MEMCACHED_HOST and, instead of the fixed 11211, MEMCACHED_PORT: the private server's) and
#     `new Deadbolt\Store\PostgreSqlStore('pgsql:host='.POSTGRES_HOST, ...)` (POSTGRES_HOST carries the private server's
#     port: "127.0.0.1;port=N", which PDO's DSN form takes as it is), and `new Deadbolt\Store\PdoStore('sqlite:...')`
#     (its testDsnWithPostgreSQL on the same private PostgreSQL).
# Prints OUT_DIR; one this script made is reused.
#
#   scripts/symfony-own-tests.sh OUT_DIR
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: symfony-own-tests.sh OUT_DIR}
# Reused only when made by this very script (its digest in RECIPE): a new test file must not find an old directory.
recipe=$(sha256sum "$0" | cut -c1-16)
[ -f "$out/VERSION" ] && [ "$(cat "$out/RECIPE" 2>/dev/null)" = "$recipe" ] && { echo "$out"; exit 0; }
source scripts/lib/private-apt.sh
work=$(mktemp -d /tmp/symfony-own-tests.XXXXXX)
trap 'rm -rf "$work"' EXIT
mirror=${DEBIAN_MIRROR:-$(bash scripts/debian-mirror.sh)}
release=$(. /etc/os-release && echo "$VERSION_CODENAME")
private_apt_setup "$work/apt" "deb-src $mirror $release main"
apt-get "${private_apt_opts[@]}" update >&2
(cd "$work" && apt-get "${private_apt_opts[@]}" source --download-only symfony >&2 2>/dev/null || true)
orig=$(ls "$work"/symfony_*.orig.tar.* 2>/dev/null | head -1)
[ -n "$orig" ] || { echo "symfony-own-tests: Debian's symfony source could not be fetched" >&2; exit 1; }
tar -xf "$orig" -C "$work" --wildcards '*/Component/Semaphore/Tests/Store/*' '*/Component/Lock/Tests/Store/*'
tests_of() { dirname "$(find "$work" -path "*/Component/$1/Tests/Store/AbstractStoreTestCase.php" | head -1)"; }
mkdir -p "$out.tmp/semaphore" "$out.tmp/lock"

src=$(tests_of Semaphore)
for test in AbstractStoreTestCase AbstractRedisStoreTestCase RedisStoreTest PredisStoreTest; do
  sed -e 's/^use Symfony\\Component\\Semaphore\\Exception\\/use Deadbolt\\Semaphore\\Exception\\/' \
      -e 's/^use Symfony\\Component\\Semaphore\\Key;/use Deadbolt\\Semaphore\\Key;/' \
      -e 's/^use Symfony\\Component\\Semaphore\\PersistingStoreInterface;/use Deadbolt\\Semaphore\\PersistingStoreInterface;/' \
      -e 's/^use Symfony\\Component\\Semaphore\\Store\\RedisStore;/use Deadbolt\\Semaphore\\SemaphoreStore;/' \
      -e 's/new RedisStore(\$this->getRedisConnection())/new SemaphoreStore(new \\Deadbolt\\Store\\RedisStore($this->getRedisConnection()))/' \
      "$src/$test.php" > "$out.tmp/semaphore/$test.php"
done
grep -q 'new SemaphoreStore(new \\Deadbolt\\Store\\RedisStore' "$out.tmp/semaphore/AbstractRedisStoreTestCase.php" \
  || { echo "symfony-own-tests: the semaphore store these tests build was not found (a new Symfony layout?)" >&2; exit 1; }

src=$(tests_of Lock)
for test in AbstractStoreTestCase BlockingStoreTestTrait ExpiringStoreTestTrait UnserializableTestTrait \
    SharedLockStoreTestTrait SemaphoreStoreTest MemcachedStoreTest PostgreSqlStoreTest PdoStoreTest; do
  # MemcachedStoreTest: its server on the port of the private memcached (MEMCACHED_PORT) instead of 11211.
  sed -e 's/^use Symfony\\Component\\Lock\\Exception\\/use Deadbolt\\Exception\\/' \
      -e 's/^use Symfony\\Component\\Lock\\Key;/use Deadbolt\\Key;/' \
      -e 's/^use Symfony\\Component\\Lock\\PersistingStoreInterface;/use Deadbolt\\Store\\PersistingStoreInterface;/' \
      -e 's/^use Symfony\\Component\\Lock\\Store\\\(SemaphoreStore\|MemcachedStore\|PostgreSqlStore\|PdoStore\);/use Deadbolt\\Store\\\1;/' \
      -e "s/addServer(getenv('MEMCACHED_HOST'), 11211)/addServer(getenv('MEMCACHED_HOST'), (int) getenv('MEMCACHED_PORT'))/" \
      "$src/$test.php" > "$out.tmp/lock/$test.php"
done
# The store class an expected message names (testInvalidDriver).
sed -i -e 's/"Symfony\\Component\\Lock\\Store\\PostgreSqlStore"/"Deadbolt\\Store\\PostgreSqlStore"/' \
    "$out.tmp/lock/PostgreSqlStoreTest.php"
grep -q 'The adapter "Deadbolt\\Store\\PostgreSqlStore" does not support' "$out.tmp/lock/PostgreSqlStoreTest.php" \
  || { echo "symfony-own-tests: PostgreSqlStoreTest's testInvalidDriver was not found as expected (a new Symfony layout?)" >&2; exit 1; }
for store in SemaphoreStore MemcachedStore PostgreSqlStore; do
  grep -q "^use Deadbolt\\\\Store\\\\$store;" "$out.tmp/lock/${store}Test.php" \
    || { echo "symfony-own-tests: the $store these tests build was not found (a new Symfony layout?)" >&2; exit 1; }
done
grep -q "(int) getenv('MEMCACHED_PORT')" "$out.tmp/lock/MemcachedStoreTest.php" \
  || { echo "symfony-own-tests: MemcachedStoreTest's server was not found (a new Symfony layout?)" >&2; exit 1; }
if grep -n 'Symfony\\Component\\Lock\\[A-Z][A-Za-z]*;' "$out.tmp"/lock/*.php | grep -v 'Tests\\' >&2; then
  echo "symfony-own-tests: symfony/lock classes left in its tests (above): a new Symfony layout?" >&2; exit 1
fi

echo "symfony $(basename "$orig" | sed 's/^symfony_\([^+]*\).*/\1/') (Debian $release)" > "$out.tmp/VERSION"
echo "$recipe" > "$out.tmp/RECIPE"
rm -rf "$out" && mv "$out.tmp" "$out"
echo "$out"
