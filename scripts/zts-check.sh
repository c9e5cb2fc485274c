#!/usr/bin/env bash
# Runs inside a fresh copy of the Debian 13 build root with a thread-safe PHP in /opt/php-zts (scripts/test-dist.sh):
# every way in refuses it with a message that says ZTS, before anything is built or written.
#   1. cargo build for it (build.rs)      2. phpize + ./configure for it (ext/config.m4)
#   3. install-binary.sh into it (the .so of the NTS build)
set -uo pipefail
cd "$(dirname "$0")/.."
zts=/opt/php-zts/bin
"$zts/php" -n -r 'exit(PHP_ZTS ? 0 : 1);' || { echo "zts-check: $zts/php is not a ZTS build" >&2; exit 1; }
failed=0
expect_refusal() {  # expect_refusal WHAT LOG: the step failed and its output names ZTS
  local what=$1 log=$2
  if grep -q 'supports non-thread-safe (NTS) PHP only' "$log"; then
    echo "zts-check: $what refuses ZTS: $(grep -m1 'supports non-thread-safe (NTS) PHP only' "$log" | cut -c1-220)"
  else
    echo "zts-check: FAIL: $what did not refuse ZTS with a clear message:" >&2; tail -15 "$log" >&2; failed=1
  fi
}
log=$(mktemp)
if PHP_CONFIG=$zts/php-config CARGO_TARGET_DIR=$PWD/target/zts-check cargo build --release --locked >"$log" 2>&1; then
  echo "zts-check: FAIL: cargo build succeeded for a ZTS PHP" >&2; failed=1
else expect_refusal "cargo build" "$log"; fi
work=$(mktemp -d); cp ext/config.m4 ext/Makefile.frag "$work/"
(cd "$work" && "$zts/phpize" >/dev/null 2>&1 && ./configure --with-php-config="$zts/php-config") >"$log" 2>&1 \
  && { echo "zts-check: FAIL: configure succeeded for a ZTS PHP" >&2; failed=1; } || expect_refusal "phpize + ./configure" "$log"
ext_dir=$("$zts/php" -n -r 'echo PHP_EXTENSION_DIR;')
before=$(ls -A "$ext_dir" 2>/dev/null; ls -A /opt/php-zts/etc/conf.d 2>/dev/null)
if PHP=$zts/php bash scripts/install-binary.sh install "${DEADBOLT_NTS_SO:-target/debian13/release/libdeadbolt.so}" >"$log" 2>&1; then
  echo "zts-check: FAIL: install-binary.sh installed into a ZTS PHP" >&2; failed=1
else expect_refusal "install-binary.sh" "$log"; fi
[ "$before" = "$(ls -A "$ext_dir" 2>/dev/null; ls -A /opt/php-zts/etc/conf.d 2>/dev/null)" ] \
  || { echo "zts-check: FAIL: install-binary.sh wrote something before refusing" >&2; failed=1; }
rm -rf "$work" "$log"
[ $failed = 0 ] && echo "zts-check: PASS"
exit $failed
