#!/usr/bin/env bash
# The thread suite (work in progress for thread-safe PHP): Deadbolt built for a ZTS PHP 8.4 (scripts/zts-php.sh), in
# a multi-threaded host of our own (tests/Threads/driver.c: the embed SAPI, N threads each running PHP requests one
# after another, as FrankenPHP's threads do, or one long request each, as its worker mode does). Checks correctness
# only (exact counters, locks kept by the refresher); the throughput lines it prints are figures, not checks.
#
#   scripts/test-threads.sh      # make test-threads
#
# Deadbolt still refuses ZTS PHP for users (build.rs, config.m4, install-binary.sh); the suite builds with
# DEADBOLT_ZTS_IN_PROGRESS=1 until it covers what thread-safe PHP needs (docs/ARCHITECTURE.md, "PHP threads").
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(bash scripts/zts-php.sh)
out=$PWD/target/zts
DEADBOLT_ZTS_IN_PROGRESS=1 PHP=$prefix/bin/php PHP_CONFIG=$prefix/bin/php-config CARGO_TARGET_DIR=$out \
  cargo build --release --locked
# -D_GNU_SOURCE: PHP's headers use glibc's memrchr and mempcpy.
gcc -D_GNU_SOURCE -O1 -g -Wall -Werror -o "$out/driver" tests/Threads/driver.c \
  $("$prefix/bin/php-config" --includes) -L"$prefix/lib" -lphp -Wl,-rpath,"$prefix/lib" -lpthread
run=$PWD/target/test-run/threads
rm -rf "$run"; mkdir -p "$run/ini"
echo "extension=$out/release/libdeadbolt.so" > "$run/ini/deadbolt.ini"
port=$(bash scripts/redis-start.sh "$run/redis")
trap 'bash scripts/redis-stop.sh "$run/redis" >/dev/null 2>&1 || true' EXIT
dsn=redis://127.0.0.1:$port
failed=0

# drive MODE THREADS REQUESTS SCRIPT [NAME=VALUE...]: the driver, with the environment the scripts read. A hang
# (threads of one process waiting on each other: with one Redis connection shared by every PHP thread, 8 threads on
# one lock stalled for good) is a failure after 300 s, never a wait forever.
drive() {
  local mode=$1 threads=$2 requests=$3 script=$4; shift 4
  timeout 300 env PHP_INI_SCAN_DIR="$run/ini" DSN="$dsn" "$@" \
    "$out/driver" "$mode" "$threads" "$requests" "$PWD/tests/Threads/$script"
}

# counter STORE MODE THREADS REQUESTS CYCLES: every cycle counted once, and how fast.
counter() {
  local store=$1 mode=$2 threads=$3 requests=$4 cycles=$5 dir
  dir=$(mktemp -d "$run/counter.XXXX"); echo 0 > "$dir/counter"
  local start=$EPOCHREALTIME
  if ! drive "$mode" "$threads" "$requests" counter.php STORE="$store" DIR="$dir" CYCLES="$cycles"; then
    echo "threads: FAIL: $store, $mode, $threads threads: the driver failed"; failed=1; return
  fi
  local want=$((threads * requests * cycles)) got
  got=$(cat "$dir/counter")
  local rate
  rate=$(awk -v n="$want" -v a="$start" -v b="$EPOCHREALTIME" 'BEGIN { printf "%.0f", n / (b - a) }')
  if [ "$got" = "$want" ]; then
    echo "threads: ok: $store, $mode mode, $threads threads: $got of $want cycles counted ($rate cycles/s)"
  else
    echo "threads: FAIL: $store, $mode mode, $threads threads: the counter says $got, $want cycles ran"; failed=1
  fi
}

for store in flock redis; do
  counter "$store" requests 8 10 100     # 8 threads x 1,000 cycles, in requests of 100
  counter "$store" worker 8 10 100       # 8 threads x 1,000 cycles, one long request each
  for threads in 1 2 4; do counter "$store" requests "$threads" 4 250; done
done
# bailout STORE: requests that end holding the lock (exit, an uncaught exception, a fatal error) leave nothing held.
# Half the requests end in an error by design, so the driver's status says only whether it crashed (a signal).
bailout() {
  local store=$1 dir rc=0
  dir=$(mktemp -d "$run/bailout.XXXX"); echo 0 > "$dir/counter"
  drive requests 8 8 bailout.php STORE="$store" DIR="$dir" > "$dir/log" 2>&1 || rc=$?
  local got; got=$(cat "$dir/counter")
  if [ "$rc" -le 1 ] && [ "$got" = 64 ]; then
    echo "threads: ok: $store, 8 threads: 64 requests ended holding the lock or not, none left it held"
  else
    echo "threads: FAIL: $store: the driver exited with $rc, the counter says $got of 64"; tail -5 "$dir/log"; failed=1
  fi
}
bailout flock
bailout redis

# timelimit STORE: set_time_limit() ends a blocking wait in its own thread only (ZTS PHP arms a timer per thread):
# three waiters end with PHP's fatal error while thread 0 keeps its lock, then releases it.
timelimit() {
  local store=$1 dir rc=0
  dir=$(mktemp -d "$run/timelimit.XXXX")
  drive worker 4 1 timelimit.php STORE="$store" DIR="$dir" WAITERS=3 > "$dir/log" 2>&1 || rc=$?
  local limited; limited=$(grep -c 'Maximum execution time of 1 second exceeded' "$dir/log" || true)
  if [ "$rc" = 1 ] && [ "$limited" = 3 ] && [ -e "$dir/released" ] && ! ls "$dir"/acquired.* >/dev/null 2>&1; then
    echo "threads: ok: $store: 3 waits ended by their own thread's time limit, the holder kept its lock"
  else
    echo "threads: FAIL: $store: time limits in threads (driver $rc, $limited of 3 limited)"; tail -5 "$dir/log"
    failed=1
  fi
}
timelimit flock
timelimit redis

# forgotten STORE: worker mode, 8 threads x 50 logical requests each keeping its lock alive past its end;
# Deadbolt\Worker::endRequest() releases each in its own thread, so every cycle is counted once and nobody stalls.
forgotten() {
  local store=$1 dir
  dir=$(mktemp -d "$run/forgotten.XXXX"); echo 0 > "$dir/counter"
  if drive worker 8 1 forgotten.php STORE="$store" DIR="$dir" CYCLES=50 && [ "$(cat "$dir/counter")" = 400 ]; then
    echo "threads: ok: $store, worker mode, 8 threads: 400 logical requests, each forgotten lock released at its end"
  else
    echo "threads: FAIL: $store: Worker::endRequest() in threads (counter $(cat "$dir/counter") of 400)"; failed=1
  fi
}
forgotten flock
forgotten redis

if drive requests 8 2 refresh.php; then
  echo "threads: ok: autoRefresh locks in 8 threads kept alive by the one refresher"
else
  echo "threads: FAIL: autoRefresh locks in 8 threads"; failed=1
fi
exit $failed
