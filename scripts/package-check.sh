#!/usr/bin/env bash
# Runs inside a fresh Debian root (scripts/test-dist.sh): installs Deadbolt one way, checks that every SAPI of the
# root's PHP loads it and that the report job acquires and skips with it, uninstalls, and checks that nothing of it
# is left (the PHP directories list exactly what they listed before).
#
#   package-check.sh deb FILE.deb       # dpkg -i, dpkg -r (disabled?), dpkg --purge
#   package-check.sh tgz FILE.tgz       # install.sh from the tarball, then install.sh uninstall
#   package-check.sh make               # make install / make uninstall of the build tree (CARGO_TARGET_DIR)
#   package-check.sh dockerfile FILE.tgz  # deploy/Dockerfile's RUN step as written, then install.sh uninstall
#
# DEADBOLT_CHECK_THREADS=DRIVER adds, while installed, PHP threads sharing a lock (expect_threads).
# DEADBOLT_CHECK_REDIS=1 adds, while installed: the root's own redis-server (installed into this throw-away copy),
# and a Redis lock handed over to a waiter blocked in acquire(true) (scripts/handover-check.php).
set -euo pipefail
cd "$(dirname "$0")/.."
how=${1:?usage: package-check.sh deb|tgz|make [FILE]}; file=${2:-}
fail() { echo "package-check ($how): FAIL: $*" >&2; exit 1; }

snapshot() {
  { find /etc/php /usr/lib/php /usr/local/etc/php /usr/local/lib/php /var/lib/php 2>/dev/null || true; } | sort
}
sapis() {  # every PHP binary of the root: the CLI and each php-fpm
  command -v php
  ls /usr/sbin/php-fpm* /usr/local/sbin/php-fpm 2>/dev/null || true
}
expect_loaded() {
  local bin
  for bin in $(sapis); do
    "$bin" -m 2>/dev/null | grep -x deadbolt >/dev/null || fail "$bin -m does not list deadbolt"
    echo "package-check ($how): $bin -m lists deadbolt"
  done
  # Both runs start at once and race for the lock; the one that comes second must still find it held. Four seconds
  # of work instead of 1.5 keep that so when PHP starts slowly (under qemu, arm64 PHP starts in ~0.5 s).
  REPORT_WORK_MS=${REPORT_WORK_MS:-4000} bash scripts/demo.sh --installed >/tmp/demo.log 2>&1 || { cat /tmp/demo.log; fail "the report job did not acquire and skip"; }
  echo "package-check ($how): report.php run twice at once: one acquired, one skipped"
  [ "${DEADBOLT_CHECK_REDIS:-0}" = 1 ] && expect_handover
  [ -n "${DEADBOLT_CHECK_THREADS:-}" ] && expect_threads
  return 0
}
# PHP threads of one process sharing one lock with the installed module, as PHP's ini files load it:
# DEADBOLT_CHECK_THREADS is the thread suite's host (scripts/thread-driver.sh), 8 threads x 1,000 flock cycles.
expect_threads() {
  local dir; dir=$(mktemp -d); echo 0 > "$dir/counter"
  STORE=flock DIR=$dir CYCLES=125 timeout 300 "$DEADBOLT_CHECK_THREADS" requests 8 8 "$PWD/tests/Threads/counter.php" \
    || fail "PHP threads with the installed module: the driver failed"
  [ "$(cat "$dir/counter")" = 8000 ] || fail "PHP threads: the counter says $(cat "$dir/counter") of 8000 cycles"
  echo "package-check ($how): 8 PHP threads of one process, 8,000 flock cycles on one lock, counted exactly"
}
expect_handover() {
  command -v redis-server >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    redis-server >/dev/null 2>&1 || fail "apt-get install redis-server"
  local port rc=0
  port=$(bash scripts/redis-start.sh /tmp/handover-redis) || fail "redis-server did not start"
  php scripts/handover-check.php "$port" || rc=$?
  bash scripts/redis-stop.sh /tmp/handover-redis
  [ $rc = 0 ] || fail "a Redis lock was not handed over to its waiter"
  echo "package-check ($how): a Redis lock on $(redis-server --version | cut -d' ' -f3) ($(uname -m)) handed over to a waiter"
}
expect_unloaded() {
  local bin
  for bin in $(sapis); do
    if "$bin" -m 2>/dev/null | grep -x deadbolt >/dev/null; then fail "$bin -m still lists deadbolt after $1"; fi
  done
  echo "package-check ($how): no SAPI loads deadbolt after $1"
}

echo "package-check ($how): $(. /etc/os-release; echo "$PRETTY_NAME"), $(php -r 'echo "PHP ", PHP_VERSION;'), \
compilers: $(command -v cc gcc clang rustc cargo 2>/dev/null | tr '\n' ' ' || true)"
before=$(snapshot)
case "$how" in
  deb)
    pkg=$(dpkg-deb -f "$file" Package)
    dpkg -i "$file" >/dev/null || fail "dpkg -i $file"
    expect_loaded
    if dpkg-deb -c "$file" | grep '/deadbolt$' >/dev/null; then
      deadbolt --help >/dev/null || fail "the deadbolt command does not run after dpkg -i"
      echo "package-check ($how): deadbolt --help runs (/usr/bin/deadbolt -> $(readlink -f /usr/bin/deadbolt))"
    fi
    dpkg -r "$pkg" >/dev/null || fail "dpkg -r $pkg"
    [ ! -e /usr/bin/deadbolt ] && [ ! -L /usr/bin/deadbolt ] || fail "dpkg -r left /usr/bin/deadbolt behind"
    expect_unloaded "dpkg -r"
    dpkg --purge "$pkg" >/dev/null || fail "dpkg --purge $pkg" ;;
  tgz)
    tmp=$(mktemp -d); tar -xzf "$file" -C "$tmp"
    "$tmp/install.sh" install "$file" || fail "install.sh install"
    expect_loaded
    "$tmp/install.sh" uninstall || fail "install.sh uninstall"
    rm -rf "$tmp"
    expect_unloaded "install.sh uninstall" ;;
  dockerfile)
    # The RUN instruction of deploy/Dockerfile, its continuation lines joined, run by sh as docker would: after the
    # COPY of the tarballs into /tmp/deadbolt-dist/, with the build arguments docker gives it.
    run=$(sed -n '/^RUN /,/[^\\]$/p' deploy/Dockerfile | sed 's/^RUN //; s/\\$//' | tr '\n' ' ')
    [ -n "$run" ] || fail "no RUN step in deploy/Dockerfile"
    mkdir -p /tmp/deadbolt-dist && cp "$file" /tmp/deadbolt-dist/
    phpver=$(php -r 'echo PHP_MAJOR_VERSION, ".", PHP_MINOR_VERSION;')
    PHP_VERSION=$phpver TARGETARCH=$(dpkg --print-architecture) sh -ec "$run" || fail "the Dockerfile's RUN step: $run"
    [ ! -e /tmp/deadbolt-dist ] || fail "the RUN step left /tmp/deadbolt-dist behind"
    expect_loaded
    bash scripts/install-binary.sh uninstall || fail "install-binary.sh uninstall"
    expect_unloaded "install-binary.sh uninstall" ;;
  make)
    make install || fail "make install"
    expect_loaded
    # With a copy installed, the build tree's commands still run the build tree's .so, silently (scripts/php.sh),
    # and the stubs still lint (php -n -l: the installed module's functions do not clash with their declarations).
    so=${CARGO_TARGET_DIR:-$PWD/target}/release/libdeadbolt.so
    out=$(bash scripts/php.sh "$so" -r 'echo implode(",", array_unique(preg_grep("~deadbolt~", array_map(
      fn ($l) => (string) substr($l, (int) strrpos($l, " ") + 1), file("/proc/self/maps", FILE_IGNORE_NEW_LINES)))));' 2>&1)
    [ "$out" = "$(realpath "$so")" ] || fail "scripts/php.sh with deadbolt installed loaded: $out"
    echo "package-check ($how): with deadbolt installed, scripts/php.sh loads only the build tree's $so"
    for f in $(find stubs -name '*.php'); do php -n -l "$f" >/dev/null || fail "php -n -l $f with deadbolt installed"; done
    echo "package-check ($how): with deadbolt installed, the stubs lint"
    make uninstall || fail "make uninstall"
    expect_unloaded "make uninstall" ;;
  *) fail "unknown way $how" ;;
esac
after=$(snapshot)
if [ "$before" != "$after" ]; then
  diff <(echo "$before") <(echo "$after") >&2 || true
  fail "files were left behind or removed"
fi
echo "package-check ($how): PASS (nothing left behind)"
