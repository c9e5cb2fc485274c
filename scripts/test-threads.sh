#!/usr/bin/env bash
# The thread suite: Deadbolt built for a thread-safe (ZTS) PHP 8.4 (scripts/zts-php.sh, configured as php:8.4-zts),
# in a multi-threaded host of our own (tests/Threads/driver.c: the embed SAPI, N threads each running PHP requests one
# after another, as FrankenPHP's threads do, or one long request each, as its worker mode does). Checks correctness
# only (exact counters, locks kept by the refresher, released at the end of a request, time limits, a fork from one
# thread, a signal handler in a waiting thread), then runs the scenarios again, smaller, under valgrind's helgrind
# and fails on any report (tests/Threads/helgrind.supp says what of Rust's standard library it cannot see, and why);
# the throughput lines it prints are figures, not checks. Also: phpize + ./configure accept that PHP.
#
#   scripts/test-threads.sh      # make test-threads
#
# The build is the one make dist packages as the -zts tarball: with the `helgrind` feature (core/src/sync.rs), whose
# announcements to valgrind are one flag test per lock operation outside valgrind.
set -euo pipefail
cd "$(dirname "$0")/.."
prefix=$(bash scripts/zts-php.sh)
out=$PWD/target/zts
bash scripts/seed-target.sh "$out"
PHP=$prefix/bin/php PHP_CONFIG=$prefix/bin/php-config CARGO_TARGET_DIR=$out cargo build --release --locked --features helgrind
bash scripts/thread-driver.sh "$prefix" "$out/driver"
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

for store in flock redis semaphore; do
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

# memory MODE REQUESTS CYCLES: 8 threads each with an InMemoryStore of its own on one resource name. A store is its
# object's, so the threads all hold the name at once; each counts its own cycles under its lock, with a second Lock
# from its store refused while it holds.
memory() {
  local mode=$1 requests=$2 cycles=$3 dir rc=0 t counts="" want=""
  dir=$(mktemp -d "$run/memory.XXXX")
  drive "$mode" 8 "$requests" memory.php STORE=memory DIR="$dir" THREADS=8 CYCLES="$cycles" || rc=$?
  for t in {0..7}; do
    counts+=" $(cat "$dir/counter.$t" 2>/dev/null || echo none)"; want+=" $((requests * cycles))"
  done
  if [ "$rc" = 0 ] && [ "$counts" = "$want" ]; then
    echo "threads: ok: memory, $mode mode, 8 threads: each its own store, $((requests * cycles)) cycles counted in each"
  else
    echo "threads: FAIL: memory, $mode mode, 8 threads: driver $rc, per-thread counters$counts"; failed=1
  fi
}
memory worker 1 1000
memory requests 10 100

# fork STORE: worker mode, 4 threads; thread 0 forks while threads 1..3 hold locks (and take others): the child finds
# them held, takes one of its own, ends with status 0 and leaves theirs held; all are free once released.
fork() {
  local store=$1 dir rc=0
  dir=$(mktemp -d "$run/fork.XXXX")
  drive worker 4 1 fork.php STORE="$store" DIR="$dir" > "$dir/log" 2>&1 || rc=$?
  if [ "$rc" = 0 ] && [ "$(cat "$dir/child" 2>/dev/null)" = ok ] && [ -e "$dir/free" ]; then
    echo "threads: ok: $store: a fork from one of 4 threads while 3 hold locks: the child took its own, left theirs"
  else
    echo "threads: FAIL: $store: fork while other threads hold locks (driver $rc)"; tail -5 "$dir/log"; failed=1
  fi
}
fork flock
fork redis

# signals STORE: a SIGUSR1 handler that throws ends a blocking acquire in its own thread, holding nothing; the holder
# keeps its lock until it releases it, and the lock is free after.
signals() {
  local store=$1 dir rc=0
  dir=$(mktemp -d "$run/signals.XXXX")
  drive worker 2 1 signals.php STORE="$store" DIR="$dir" > "$dir/log" 2>&1 || rc=$?
  if [ "$rc" = 0 ] && [ -e "$dir/free" ]; then
    echo "threads: ok: $store: a signal handler's exception ended a wait in its own thread, the holder kept its lock"
  else
    echo "threads: FAIL: $store: a signal during a wait in threads (driver $rc)"; tail -5 "$dir/log"; failed=1
  fi
}
signals flock
signals redis

# phpize + ./configure for the ZTS PHP (PIE's source build): accepted, and said so (make is the cargo build above).
configure_check() {
  local work; work=$(mktemp -d "$run/phpize.XXXX")
  cp -r ext "$work/ext"; cp Cargo.toml "$work/"   # configure looks for the crate above ext/
  if (cd "$work/ext" && "$prefix/bin/phpize" && ./configure --with-php-config="$prefix/bin/php-config") \
      > "$work/log" 2>&1 && grep -q 'thread-safe (ZTS) PHP... yes' "$work/log"; then
    echo "threads: ok: phpize + ./configure accept the ZTS PHP ($(grep -o 'thread-safe (ZTS) PHP... yes.*' "$work/log"))"
  else
    echo "threads: FAIL: phpize + ./configure for the ZTS PHP"; tail -5 "$work/log"; failed=1
  fi
}
configure_check

# helgrind NAME MODE THREADS REQUESTS SCRIPT [NAME=VALUE...]: a scenario again under helgrind, smaller (valgrind runs
# it some fifty times slower); any report fails it. The scripts' own checks must hold there too.
helgrind() {
  local name=$1 mode=$2 threads=$3 requests=$4 script=$5 dir rc=0; shift 5
  dir=$(mktemp -d "$run/helgrind.XXXX"); echo 0 > "$dir/counter"
  timeout 600 env PHP_INI_SCAN_DIR="$run/ini" DSN="$dsn" DIR="$dir" "$@" valgrind --tool=helgrind --error-exitcode=99 \
    --num-callers=40 --suppressions="$PWD/tests/Threads/helgrind.supp" --log-file="$dir/helgrind.log" \
    "$out/driver" "$mode" "$threads" "$requests" "$PWD/tests/Threads/$script" > "$dir/out" 2>&1 || rc=$?
  local summary; summary=$(grep -o 'ERROR SUMMARY: .*' "$dir/helgrind.log" | tail -1)
  if [ "$rc" -le "${HELGRIND_STATUS:-0}" ] && [ "${summary#ERROR SUMMARY: 0 errors}" != "$summary" ]; then
    echo "threads: ok: helgrind: $name: $summary"
  else
    echo "threads: FAIL: helgrind: $name (driver $rc): $summary (log: $dir/helgrind.log)"; tail -5 "$dir/out"; failed=1
  fi
}
if command -v valgrind >/dev/null; then
  for store in flock redis memory; do
    helgrind "$store, 4 threads x 2 requests x 20 cycles" requests 4 2 counter.php STORE=$store CYCLES=20
    helgrind "$store, worker mode, 4 threads x 40 cycles" worker 4 4 counter.php STORE=$store CYCLES=10
  done
  for store in flock redis; do
    HELGRIND_STATUS=1 helgrind "$store, requests ending while they hold the lock" requests 4 4 bailout.php STORE=$store
    helgrind "$store, Worker::endRequest() in 4 threads" worker 4 1 forgotten.php STORE=$store CYCLES=10
  done
  # A TTL of 5 s: under helgrind on a loaded machine (CI's lanes at once) a 0.4 s TTL left the refresher too little
  # wall time, and a lock was lost; the sleep still outlasts the TTL twice over.
  helgrind "autoRefresh locks in 4 threads" requests 4 1 refresh.php TTL=5 SLEEP=12
else
  echo "threads: FAIL: no valgrind (scripts/bootstrap.sh installs it)"; failed=1
fi
exit $failed
