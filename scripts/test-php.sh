#!/usr/bin/env bash
# The PHPUnit suites of `make test`, each pass against its own private server on a free loopback port:
#   1. every suite against redis-server (Redis 7.0 on Debian 12, 8.0 on Debian 13) and this platform's symfony/lock;
#   2. where valkey-server is installed (Debian 13), every suite again against Valkey but the slow group (the failover,
#      chaos, sentinel and refresher runs, as make check leaves out), which pass 1 runs against Redis 8.0 there, and
#      the no-redis group (the database and memcached stores' suites: no Redis server in them, nothing for Valkey);
#   3. symfony/semaphore's own store tests (RedisStoreTest, PredisStoreTest and the test cases they extend), against a
#      server of their own (they flush it), and symfony/lock's SemaphoreStoreTest (with what it extends), in an IPC
#      namespace of its own (it counts the host's semaphore sets), its MemcachedStoreTest against a private memcached
#      and its PostgreSqlStoreTest and PdoStoreTest against a private PostgreSQL, each changed mechanically to build
#      Deadbolt's store
#      (scripts/symfony-own-tests.sh): where PHPUnit is 9.6 (Debian 12, with Debian 12's symfony 5.4 tests);
#   4. with DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD set (make test-debian13 unpacks Debian sid's symfony/lock 7.4 with
#      scripts/symfony-lock-sid.sh), the interop suites again with that symfony/lock, tests/Console (Symfony
#      Console 7.4's LockableTrait on Deadbolt), which needs it, and the semaphores' interop and bridge suites with
#      symfony/semaphore 7.4;
#   5. tests/Versions, a fleet of two Deadbolt versions on one Redis (this build and an earlier one, which
#      scripts/previous-build.sh builds from this clone's history), unless DEADBOLT_PREVIOUS=no (make test-debian13:
#      the host runs it) or the tree is not a git clone (a source tarball: there is no earlier version to build).
#
#   scripts/test-php.sh SO RUN_DIR                     # all of the above
#   scripts/test-php.sh SO RUN_DIR PHPUNIT_ARGS...     # one pass against redis-server with those arguments
#                                                      # (make check: --exclude-group slow)
set -euo pipefail
cd "$(dirname "$0")/.."
so=${1:?usage: test-php.sh SO RUN_DIR [PHPUNIT_ARGS...]}; run_dir=${2:?usage: test-php.sh SO RUN_DIR [PHPUNIT_ARGS...]}
shift 2

# pass NAME SERVER CLI [phpunit arguments]: one PHPUnit run against a fresh server of that kind.
pass() {
  local name=$1 server=$2 cli=$3; shift 3
  local dir=$run_dir/$name port rc=0
  bash scripts/redis-stop.sh "$dir" >/dev/null 2>&1 || true
  port=$(DEADBOLT_REDIS_SERVER=$server DEADBOLT_REDIS_CLI=$cli bash scripts/redis-start.sh "$dir")
  echo "== $name: $("$server" --version | cut -d' ' -f1-3) on 127.0.0.1:$port"
  # REDIS_HOST: how symfony/semaphore's own tests find their server.
  DEADBOLT_REDIS_SERVER=$server DEADBOLT_REDIS_CLI=$cli DEADBOLT_REDIS_PORT=$port DEADBOLT_REQUIRE_REDIS=1 \
    REDIS_HOST=127.0.0.1:$port \
    bash scripts/phpunit.sh "$so" "$@" || rc=$?
  bash scripts/redis-stop.sh "$dir"
  return $rc
}

if (($#)); then
  pass redis redis-server redis-cli "$@"
  exit
fi
pass redis redis-server redis-cli
if command -v valkey-server >/dev/null 2>&1; then
  # PHPUnit 9.6 takes the groups as one comma list (a second --exclude-group replaces the first); PHPUnit 10 and later
  # one group per --exclude-group (a comma list is deprecated there: a runner warning, which fails the run).
  if phpunit --version | grep -q '^PHPUnit 9\.'; then
    leave_out=(--exclude-group slow,no-redis)
  else
    leave_out=(--exclude-group slow --exclude-group no-redis)
  fi
  pass valkey valkey-server valkey-cli "${leave_out[@]}"
else
  echo "== valkey: not packaged for this Debian (Debian 13 has it: make test-debian13 runs this pass)"
fi
if phpunit --version | grep -q '^PHPUnit 9\.'; then
  own=$(bash scripts/symfony-own-tests.sh "$run_dir/../symfony-own-tests")
  echo "== $(cat "$own/VERSION")'s own store tests, on Deadbolt's stores"
  DEADBOLT_SYMFONY_SEMAPHORE_TESTS=$own/semaphore pass symfony-semaphore-own redis-server redis-cli "$own/semaphore/RedisStoreTest.php"
  DEADBOLT_SYMFONY_SEMAPHORE_TESTS=$own/semaphore pass symfony-semaphore-own redis-server redis-cli "$own/semaphore/PredisStoreTest.php"
  # Its own IPC namespace (a user namespace too when not root, to be allowed one): the test counts the sets it sees.
  ipc_alone=(unshare --ipc); [ "$(id -u)" -eq 0 ] || ipc_alone=(unshare --user --map-root-user --ipc)
  echo "== symfony/lock's SemaphoreStoreTest, in an IPC namespace of its own"
  DEADBOLT_SYMFONY_LOCK_TESTS=$own/lock "${ipc_alone[@]}" bash scripts/phpunit.sh "$so" "$own/lock/SemaphoreStoreTest.php"
  echo "== symfony/lock's MemcachedStoreTest, against a private memcached"
  memcached_dir=$run_dir/symfony-memcached-own
  bash scripts/memcached-stop.sh "$memcached_dir" >/dev/null 2>&1 || true
  memcached_port=$(bash scripts/memcached-start.sh "$memcached_dir")
  rc=0
  DEADBOLT_SYMFONY_LOCK_TESTS=$own/lock MEMCACHED_HOST=127.0.0.1 MEMCACHED_PORT=$memcached_port \
    bash scripts/phpunit.sh "$so" "$own/lock/MemcachedStoreTest.php" || rc=$?
  bash scripts/memcached-stop.sh "$memcached_dir"
  [ "$rc" = 0 ] || exit "$rc"
  echo "== symfony/lock's PostgreSqlStoreTest, against a private PostgreSQL"
  postgres_dir=/tmp/deadbolt-symfony-postgres-own.$$
  postgres_port=$(bash scripts/postgres-start.sh "$postgres_dir")
  rc=0
  DEADBOLT_SYMFONY_LOCK_TESTS=$own/lock POSTGRES_HOST="127.0.0.1;port=$postgres_port;sslmode=disable" \
    bash scripts/phpunit.sh "$so" "$own/lock/PostgreSqlStoreTest.php" || rc=$?
  [ "$rc" = 0 ] || { bash scripts/postgres-stop.sh "$postgres_dir"; exit "$rc"; }
  echo "== symfony/lock's PdoStoreTest (SQLite; its PostgreSQL DSN test against the same private PostgreSQL)"
  DEADBOLT_SYMFONY_LOCK_TESTS=$own/lock POSTGRES_HOST="127.0.0.1;port=$postgres_port;sslmode=disable" \
    bash scripts/phpunit.sh "$so" "$own/lock/PdoStoreTest.php" || rc=$?
  bash scripts/postgres-stop.sh "$postgres_dir"
  [ "$rc" = 0 ] || exit "$rc"
else
  echo "== symfony/semaphore's and symfony/lock's own store tests: run where PHPUnit is 9.6 (Debian 12)"
fi
if [ -n "${DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD:-}" ]; then
  echo "== symfony/lock $(cat "$(dirname "$DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD")/../../../../../../version" 2>/dev/null) from $DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD"
  DEADBOLT_SYMFONY_LOCK_AUTOLOAD=$DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD pass symfony-lock-7.4 redis-server redis-cli tests/Interop
  DEADBOLT_SYMFONY_LOCK_AUTOLOAD=$DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD pass symfony-console-7.4 redis-server redis-cli tests/Console
  # symfony/semaphore of the same release, unpacked beside it: the semaphores' interop and bridge suites.
  semaphore_autoload=$(dirname "$(dirname "$DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD")")/Semaphore/autoload.php
  for suite in tests/Semaphore/SymfonySemaphoreInteropTest.php tests/Interop/SymfonyBridgeSemaphoreTest.php; do
    DEADBOLT_SYMFONY_LOCK_AUTOLOAD=$DEADBOLT_SYMFONY_LOCK_74_AUTOLOAD \
      DEADBOLT_SYMFONY_SEMAPHORE_AUTOLOAD=$semaphore_autoload pass symfony-semaphore-7.4 redis-server redis-cli "$suite"
  done
fi
if [ "${DEADBOLT_PREVIOUS:-yes}" = no ]; then
  echo "== two Deadbolt versions on one Redis: left out here (DEADBOLT_PREVIOUS=no)"
elif ! git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  echo "== two Deadbolt versions on one Redis: not a git clone, no earlier version to build"
else
  previous=$(bash scripts/previous-build.sh)
  echo "== two Deadbolt versions on one Redis: this build and $(basename "$(dirname "$previous")")"
  DEADBOLT_PREVIOUS_SO=$previous pass versions redis-server redis-cli tests/Versions
fi
