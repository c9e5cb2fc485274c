#!/usr/bin/env bash
# make test-dist: the packages of make dist (target/dist/) where nothing but PHP is installed, each check in a fresh
# copy of its root (scripts/debian-root.sh run --fresh), without the host's Rust toolchain mounted:
#   - Debian 12 with php-cli + php-fpm:  the .deb; the PIE tarball's install.sh; make install / make uninstall
#   - Debian 13 with php-cli + php-fpm:  the same with the PHP 8.4 packages
#   - the layout of the official php:8.x images: Debian 13 with no PHP package, and PHP 8.4 built from its upstream
#     source into /usr/local with the images' configure options (scripts/php-from-source.sh nts): /usr/local/bin/php,
#     /usr/local/etc/php/conf.d, extension_dir under /usr/local/lib/php/extensions, no phpenmod, no /etc/php.
#     There: the tarball's install.sh, deploy/Dockerfile's RUN step as written, and make install / make uninstall
#   - in the Debian 13 build root beside Debian's PHP: PHP_CONFIG=/usr/local/bin/php-config builds and installs for
#     the /usr/local PHP only (scripts/php-config-check.sh)
#   - a thread-safe PHP built as the official php:8.4-zts images build theirs (scripts/zts-php.sh), alone in a fresh
#     Debian 13 root: the -zts tarball's install.sh, the report job, and 8 PHP threads of one process sharing a lock
#     with the installed module (the thread suite's host, tests/Threads/driver.c), then uninstall
#   - arm64, under qemu-user-static: Debian 12 and 13 arm64 with php-cli + php-fpm: the .deb (with a Redis lock
#     handed over to a waiter, against the root's own arm64 redis-server) and the PIE tarball's install.sh
#   - PHP 8.5: the x86_64 tarball in Debian sid with experimental's php8.5-cli + php8.5-fpm only, the arm64 tarball
#     into experimental's arm64 php8.5-cli (the cross root, under qemu)
# make install needs make in the root: that check installs it into its fresh copy first (not a compiler).
# Three groups run at once, each printed whole when it ends (arm64 under qemu is CPU; the others mostly wait on
# dpkg and servers): the Debian x86_64 and /usr/local checks, the arm64 checks, the PHP 8.5 checks.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/lib/roots.sh
dist=target/dist
[ -f "$dist/SHA256SUMS" ] || { echo "test-dist: no $dist/SHA256SUMS (run make dist)" >&2; exit 1; }
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || { echo "test-dist: SHA256SUMS does not match" >&2; exit 1; }
export DEADBOLT_ROOT_NO_TOOLCHAIN=1
logs=target/test-dist; rm -rf "$logs"; mkdir -p "$logs"
results=$logs/results   # one line per check: PASS|FAIL, its log, its label (appends of a line are atomic)
: > "$results"
# record PASS|FAIL LOG LABEL
record() { echo "$1 $2 $3" >> "$results"; }
check() {  # check LABEL ROOT CMD...: one scenario in a fresh copy of ROOT, its output also kept in its own log
  local label=$1 root=$2; shift 2
  local log; log=$(mktemp "$logs/check.XXXXXX")
  echo "== $label"
  if bash scripts/debian-root.sh run "$root" --fresh "$@" 2>&1 | tee "$log"; [ "${PIPESTATUS[0]}" = 0 ]; then
    record PASS "$log" "$label"
  else
    record FAIL "$log" "$label"
  fi
}
in_project() { echo "cd '$PWD' && $*"; }
# Where the NTS build for a platform lives: the host's own in target/, Debian 13's (built in its root) in
# target/debian13/ unless the host is Debian 13 itself.
build_dir_for() {
  if [ "$1" = debian13 ] && [ "$(. /etc/os-release; echo "$VERSION_CODENAME")" != trixie ]; then
    echo target/debian13
  else
    echo target
  fi
}

debian_x86() {
  local platform name suite phpver deb tgz build_dir
  for platform in "debian12 bookworm 8.2" "debian13 trixie 8.4"; do
    read -r name suite phpver <<< "$platform"
    deb=$(ls "$dist"/php"$phpver"-deadbolt_*_amd64.deb 2>/dev/null | head -1)
    tgz=$(ls "$dist"/php_deadbolt-*_php"$phpver"-x86_64-linux-glibc-nts.tgz 2>/dev/null | head -1)
    if [ -z "$deb" ] && [ -z "$tgz" ]; then
      echo "test-dist: make dist made no PHP $phpver packages on this machine; no $name checks"; continue
    fi
    if [ -z "$deb" ] || [ -z "$tgz" ]; then
      record FAIL - "$name: a PHP $phpver package is missing"; continue
    fi
    build_dir=$(build_dir_for "$name")
    bash scripts/debian-root.sh ensure "$name-php" "$suite" php-cli php-fpm
    check "$name: .deb ($(basename "$deb"))" "$name-php" \
      bash -c "$(in_project DEADBOLT_CHECK_REDIS=1 bash scripts/package-check.sh deb "$deb")"
    check "$name: PIE tarball + install.sh ($(basename "$tgz"))" "$name-php" \
      bash -c "$(in_project bash scripts/package-check.sh tgz "$tgz")"
    check "$name: make install / make uninstall" "$name-php" bash -c "apt-get install -y -qq --no-install-recommends make \
      >/dev/null && $(in_project CARGO_TARGET_DIR="$PWD/$build_dir" bash scripts/package-check.sh make)"
  done
}

arm64() {
  local platform name suite phpver deb tgz
  for platform in "debian12-arm64 bookworm 8.2" "debian13-arm64 trixie 8.4"; do
    read -r name suite phpver <<< "$platform"
    deb=$(ls "$dist"/php"$phpver"-deadbolt_*_arm64.deb 2>/dev/null | head -1)
    tgz=$(ls "$dist"/php_deadbolt-*_php"$phpver"-arm64-linux-glibc-nts.tgz 2>/dev/null | head -1)
    if [ -z "$deb" ] || [ -z "$tgz" ]; then
      record FAIL - "$name: a PHP $phpver arm64 package is missing"; continue
    fi
    ensure_arm64_php_root "$name-php" "$suite"
    check "$name: .deb ($(basename "$deb"))" "$name-php" \
      bash -c "$(in_project DEADBOLT_CHECK_REDIS=1 bash scripts/package-check.sh deb "$deb")"
    check "$name: PIE tarball + install.sh ($(basename "$tgz"))" "$name-php" \
      bash -c "$(in_project bash scripts/package-check.sh tgz "$tgz")"
    if [ "$name" = debian13-arm64 ]; then
      check "$name: deploy/Dockerfile's RUN step (TARGETARCH=arm64)" "$name-php" \
        bash -c "$(in_project bash scripts/package-check.sh dockerfile "$tgz")"
    fi
  done
}

php85() {
  local machine tgz root
  for machine in x86_64 arm64; do
    tgz=$(ls "$dist"/php_deadbolt-*_php8.5-"$machine"-linux-glibc-nts.tgz 2>/dev/null | head -1)
    [ -n "$tgz" ] || { record FAIL - "PHP 8.5 $machine: no tarball"; continue; }
    if [ "$machine" = x86_64 ]; then root=php85-php; ensure_php85_clean_root; else root=cross; fi
    check "PHP 8.5 $machine: PIE tarball + install.sh ($(basename "$tgz"))" "$root" \
      bash -c "$(in_project bash scripts/package-check.sh tgz "$tgz")"
  done
}

# The official images' layout, with a PHP built the way they build it; two PHPs on one machine; a ZTS PHP.
usr_local() {
  local nts tgz build_dir usr_local
  nts=$(bash scripts/php-from-source.sh nts)
  tgz=$(ls "$dist"/php_deadbolt-*_php8.4-x86_64-linux-glibc-nts.tgz | head -1)
  build_dir=$(build_dir_for debian13)
  bash scripts/debian-root.sh ensure debian13-base trixie libssl3t64
  usr_local="tar -xzf $nts -C / && export PATH=/usr/local/bin:\$PATH"
  check "/usr/local (php:8.4-cli layout): PIE tarball + install.sh" debian13-base \
    bash -c "$(in_project "$usr_local && bash scripts/package-check.sh tgz $tgz")"
  check "/usr/local (php:8.4-cli layout): deploy/Dockerfile's RUN step" debian13-base \
    bash -c "$(in_project "$usr_local && bash scripts/package-check.sh dockerfile $tgz")"
  check "/usr/local (php:8.4-cli layout): make install / make uninstall" debian13-base bash -c "apt-get install -y -qq \
    --no-install-recommends make >/dev/null && $(in_project "$usr_local && CARGO_TARGET_DIR=$PWD/$build_dir \
    bash scripts/package-check.sh make")"
  # Two PHPs on one machine (Debian's and the /usr/local one): PHP_CONFIG picks the one to build and install for.
  unset DEADBOLT_ROOT_NO_TOOLCHAIN
  check "PHP_CONFIG picks the /usr/local PHP over Debian's (build, make install/uninstall)" debian13 \
    bash -c "$(in_project "tar -xzf $nts -C / && bash scripts/php-config-check.sh")"
  zts_php
}

# The -zts tarball in a thread-safe PHP laid out as php:8.4-zts is, with nothing else in the root.
zts_php() {
  local here tgz nts driver=$logs/driver
  here=$(bash scripts/zts-php.sh)
  tgz=$(ls "$dist"/php_deadbolt-*_php8.4-x86_64-linux-glibc-zts.tgz 2>/dev/null | head -1)
  nts=$(ls "$dist"/php_deadbolt-*_php8.4-x86_64-linux-glibc-nts.tgz 2>/dev/null | head -1)
  [ -n "$tgz" ] && [ -n "$nts" ] || { record FAIL - "ZTS: no PHP 8.4 x86_64 -zts (or -nts) tarball"; return; }
  bash scripts/thread-driver.sh "$here" "$driver" /usr/local/lib
  # The -nts tarball is refused first, naming the -zts one; nothing is written.
  check "ZTS PHP (php:8.4-zts layout): -nts refused, -zts tarball + install.sh, PHP threads ($(basename "$tgz"))" \
    debian13-base bash -c "$(in_project "tar -xzf target/zts-php/php-zts.tgz -C / && export PATH=/usr/local/bin:\$PATH && \
      if out=\$(bash scripts/install-binary.sh install $nts 2>&1); then echo \"the -nts tarball installed\"; exit 1; fi && \
      echo \"\$out\" | grep -F -- 'use the *-linux-glibc-zts.tgz' && \
      DEADBOLT_CHECK_THREADS=$PWD/$driver bash scripts/package-check.sh tgz $tgz")"
}

# The groups at once, each into its own log, printed whole as it ends.
x86() { debian_x86; usr_local; }
pids=() names=()
spawn() { "$1" > "$logs/group.$1.log" 2>&1 & pids+=($!); names+=("$1"); }
spawn arm64
spawn php85
spawn x86
wait_group() { local i=$1; wait "${pids[$i]}" || record FAIL - "${names[$i]}: the group itself failed"; }
for i in "${!pids[@]}"; do
  wait_group "$i"
  echo "==== test-dist: ${names[$i]}"
  cat "$logs/group.${names[$i]}.log"
done

passed=$(grep -c '^PASS ' "$results" || true)
failed=$(grep -c '^FAIL ' "$results" || true)
[ $((passed + failed)) -gt 0 ] || { echo "test-dist: no package was checked" >&2; exit 1; }
# The failures' last lines again, at the very end, where a CI log that keeps only its tail still shows why.
failures=()
while read -r verdict log label; do
  [ "$verdict" = FAIL ] || continue
  failures+=("$label")
  [ "$log" = - ] || { echo "--- $label (last lines of $log):"; tail -10 "$log"; }
done < "$results"
failed_list=$(printf '%s; ' "${failures[@]}")
echo "test-dist: ${failures[*]:+failed: ${failed_list%; }}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
