#!/usr/bin/env bash
# Runs a subset of the PHPUnit suite under valgrind (memcheck) against the built extension.
#
#   scripts/valgrind-suite.sh                 # default subset (see DEFAULT_TESTS below)
#   scripts/valgrind-suite.sh tests/KeyTest.php tests/Fuzz   # chosen paths
#   SOAK=1 scripts/valgrind-suite.sh          # the whole suite (slow: hours on 2 cores)
#
# Environment: DEADBOLT_SO (default target/release/libdeadbolt.so), DEADBOLT_REDIS_PORT (when unset a private
# redis-server is started for the run), VALGRIND_LOG (default target/valgrind/valgrind.<pid>.log).
#
# PHP runs with USE_ZEND_ALLOC=0 (every emalloc is a real malloc valgrind can see) and ZEND_DONT_UNLOAD_MODULES=1
# (the .so stays mapped at exit, so leak stacks keep their symbols). scripts/valgrind.supp hides PHP/libc noise.
#
# Verdict: valgrind exits 99 on any unsuppressed memory error (leaks do not count there). The script then reads the
# log and FAILS (exit 1) when an error record (invalid read/write, use of uninitialised value, invalid free, definite
# leak...) names the extension anywhere in its stacks (the access, the "freed at" and "allocated at" stacks
# included). Records that never mention the extension are PHP/libc noise: listed, counted, they do not fail the run.
# A PHPUnit failure fails the run too (exit 2): a test that only fails under valgrind is a finding as well.
# The PHPUnit process and its pcntl_fork() children are traced; php processes that tests spawn with proc_open run
# natively (tests/Fuzz runs its calls in such children: point this script at tests/Fuzz with a wrapper if needed).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

DEFAULT_TESTS=(tests/Store/FlockStoreTest.php tests/Store/InMemoryStoreTest.php tests/LockTest.php tests/KeyTest.php
  tests/Store/RedisStoreTest.php tests/Store/UserStoreTest.php tests/Exception tests/GarbageCycleTest.php)

SO=${DEADBOLT_SO:-$ROOT/target/release/libdeadbolt.so}
SO=$(realpath "$SO") || { echo "valgrind-suite: no extension at ${DEADBOLT_SO:-target/release/libdeadbolt.so}" >&2; exit 1; }
command -v valgrind >/dev/null || { echo "valgrind-suite: valgrind is not installed" >&2; exit 1; }

if [ "${SOAK:-0}" = "1" ]; then
  # The configuration's suite (tests/ less tests/Console, which needs symfony/console 7.4), one PHPUnit process per
  # directory and per top-level test file: a single process for all of it reached half-way and then spent more than
  # ten minutes inside PHP's own serializer in PhpFpmTest (no memory error; a slow test in a process grown large), and
  # a fork child of a smaller process exits sooner.
  TESTS=()
  for t in tests/*/ tests/*Test.php; do
    case "$t" in tests/Support/|tests/Console/) continue ;; esac
    TESTS+=("${t%/}")
  done
elif [ $# -gt 0 ]; then
  TESTS=("$@")
else
  TESTS=("${DEFAULT_TESTS[@]}")
fi

mkdir -p "$ROOT/target/valgrind"
LOG=${VALGRIND_LOG:-$ROOT/target/valgrind/valgrind.$$.log}
rm -f "$LOG"

REDIS_DIR=""
if [ -z "${DEADBOLT_REDIS_PORT:-}" ]; then
  REDIS_DIR=$(mktemp -d /tmp/deadbolt-valgrind-redis.XXXXXX)
  DEADBOLT_REDIS_PORT=$(bash scripts/redis-start.sh "$REDIS_DIR") || exit 1
  trap 'bash scripts/redis-stop.sh "$REDIS_DIR" >/dev/null 2>&1; rm -rf "$REDIS_DIR"' EXIT
fi
export DEADBOLT_REDIS_PORT DEADBOLT_REQUIRE_REDIS=1 DEADBOLT_SO=$SO USE_ZEND_ALLOC=0 ZEND_DONT_UNLOAD_MODULES=1
# The build tree's PHP (scripts/php.sh): no installed deadbolt.so from the ini files, this PHP's PHPUnit config.
PHP_INI_SCAN_DIR=$(bash scripts/php.sh --prepare); export PHP_INI_SCAN_DIR DEADBOLT_ISOLATED=1
PHP_BIN=$(bash scripts/php-binary.sh)
PHPUNIT_BIN=${PHPUNIT:-$(command -v phpunit || echo /usr/bin/phpunit)}
PHPUNIT_CONFIG=$(bash scripts/phpunit.sh --config)

start=$(date +%s)
echo "valgrind-suite: ${TESTS[*]}"
echo "valgrind-suite: extension $SO, redis 127.0.0.1:$DEADBOLT_REDIS_PORT, log $LOG"
# One phpunit run per path (phpunit 9 takes a single path argument).
phpunit_failed=0
valgrind_rc=0
for t in "${TESTS[@]}"; do
  echo "== $t"
  # Leaks are judged from the log (below), not by the exit code: a pcntl_fork() child exits with PHPUnit's whole
  # object graph alive, and PHP leaves some of it definitely lost; an exit code 99 for that would fail its test.
  valgrind --tool=memcheck --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=none \
    --show-leak-kinds=definite --num-callers=40 --track-origins=no \
    --suppressions="$ROOT/scripts/valgrind.supp" --log-file="$LOG.part.%p" \
    "$PHP_BIN" -d extension="$SO" -d memory_limit=-1 \
      -d opcache.enable_cli=0 -d pcre.jit=0 -d display_errors=stderr -d error_reporting=-1 \
      "$PHPUNIT_BIN" -c "$PHPUNIT_CONFIG" --exclude-group not-under-valgrind --log-junit "$LOG.junit.xml" "$t"
  rc=$?
  # valgrind's exit code 99 hides PHPUnit's own: read the test outcome from PHPUnit's JUnit log instead.
  head=$(grep -m1 -o '<testsuite [^>]*>' "$LOG.junit.xml" 2>/dev/null)
  problems=$(( $(echo "$head" | sed -n 's/.* errors="\([0-9]*\)".*/\1/p' | grep . || echo 1) \
             + $(echo "$head" | sed -n 's/.* failures="\([0-9]*\)".*/\1/p' | grep . || echo 1) ))
  # No testsuite element and a clean exit: every test of that path is in the not-under-valgrind group.
  if [ -z "$head" ] && [ $rc -eq 0 ]; then problems=0; fi
  rm -f "$LOG.junit.xml"
  if [ "$problems" -ne 0 ]; then phpunit_failed=1; echo "valgrind-suite: PHPUnit reported $problems failures/errors for $t"; fi
  # One log per process: the PHPUnit process and every pcntl_fork() child of the tests (valgrind follows forks).
  cat "$LOG".part.* >> "$LOG" 2>/dev/null; rm -f "$LOG".part.*
  if [ $rc -eq 99 ]; then valgrind_rc=99; elif [ $rc -ne 0 ]; then phpunit_failed=1; echo "valgrind-suite: phpunit exited $rc for $t"; fi
done
elapsed=$(( $(date +%s) - start ))

# Split the log into error records (blank-line separated, after the "==PID== " prefix is stripped) and classify.
verdict=$(php -n -r '
  $so = basename($argv[2]);
  $text = preg_replace("/^==\d+== ?/m", "", (string) file_get_contents($argv[1]));
  $ours = 0; $noise = 0; $out = "";
  foreach (preg_split("/\n\s*\n/", $text) as $block) {
      if (!preg_match("/^(Invalid (read|write|free)|Mismatched free|Conditional jump|Use of uninitialised|Syscall param|Source and destination overlap|Argument .* of function|[\d,]+ (\([\d,]+ direct, [\d,]+ indirect\) )?bytes in [\d,]+ blocks are definitely lost)/m", $block)) {
          continue;
      }
      if (stripos($block, $so) !== false || stripos($block, "libdeadbolt") !== false || preg_match("/deadbolt(_core)?::/", $block)) {
          ++$ours; $out .= "---- EXTENSION ERROR\n$block\n";
      } else {
          ++$noise; $out .= "---- noise (no extension frame)\n".substr($block, 0, 1500)."\n";
      }
  }
  echo "$ours $noise\n$out";
' "$LOG" "$SO")
ours=$(echo "$verdict" | head -1 | cut -d" " -f1)
noise=$(echo "$verdict" | head -1 | cut -d" " -f2)
summary=$(grep -E "ERROR SUMMARY|definitely lost:" "$LOG" | sed 's/^==[0-9]*== //' | sort | uniq -c)
echo "valgrind-suite: $elapsed s; error records naming the extension: $ours; other records (PHP/libc noise): $noise"
echo "$summary"
if [ "$ours" != "0" ] || [ "$noise" != "0" ]; then echo "$verdict" | tail -n +2; fi
if [ "$ours" != "0" ]; then
  echo "valgrind-suite: FAIL: valgrind found errors in the extension (full log: $LOG)"; exit 1
fi
if [ $phpunit_failed -ne 0 ]; then
  echo "valgrind-suite: FAIL: PHPUnit failed under valgrind (log: $LOG)"; exit 2
fi
echo "valgrind-suite: PASS (valgrind exit ${valgrind_rc}; log: $LOG)"
exit 0
