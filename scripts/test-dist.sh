#!/usr/bin/env bash
# make test-dist: the packages of make dist (target/dist/) where nothing but PHP is installed, each check in a fresh
# copy of its root (scripts/debian-root.sh run --fresh), without the host's Rust toolchain mounted:
#   - Debian 12 with php-cli + php-fpm:  the .deb; the PIE tarball's install.sh; make install / make uninstall
#   - Debian 13 with php-cli + php-fpm:  the same with the PHP 8.4 packages
#   - a /usr/local layout (made from Debian 13's PHP: /usr/local/bin/php, /usr/local/etc/php/php.ini and its own
#     scan dir conf.d, extension_dir under /usr/local/lib/php/extensions, no phpenmod; the layout of the official
#     php:8.x images): the tarball's install.sh, and make install / make uninstall
# make install needs make in the root: that check installs it into its fresh copy first (not a compiler).
set -euo pipefail
cd "$(dirname "$0")/.."
dist=target/dist
[ -f "$dist/SHA256SUMS" ] || { echo "test-dist: no $dist/SHA256SUMS (run make dist)" >&2; exit 1; }
(cd "$dist" && sha256sum --quiet -c SHA256SUMS) || { echo "test-dist: SHA256SUMS does not match" >&2; exit 1; }
export DEADBOLT_ROOT_NO_TOOLCHAIN=1
passed=0; failed=0; failures=()
check() {  # check LABEL ROOT CMD...: one scenario in a fresh copy of ROOT
  local label=$1 root=$2; shift 2
  echo "== $label"
  if bash scripts/debian-root.sh run "$root" --fresh "$@"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1)); failures+=("$label")
  fi
}
in_project() { echo "cd '$PWD' && $*"; }

for platform in "debian12 bookworm 8.2" "debian13 trixie 8.4"; do
  read -r name suite phpver <<< "$platform"
  deb=$(ls "$dist"/php"$phpver"-deadbolt_*_amd64.deb 2>/dev/null | head -1)
  tgz=$(ls "$dist"/php_deadbolt-*_php"$phpver"-x86_64-linux-glibc-nts.tgz 2>/dev/null | head -1)
  if [ -z "$deb" ] || [ -z "$tgz" ]; then
    echo "test-dist: no PHP $phpver packages in $dist"; failed=$((failed + 1)); failures+=("$name: packages missing"); continue
  fi
  build_dir=target; [ "$name" = debian13 ] && build_dir=target/debian13
  [ "$(. /etc/os-release; echo "$VERSION_CODENAME")" = trixie ] && [ "$name" = debian13 ] && build_dir=target
  bash scripts/debian-root.sh ensure "$name-php" "$suite" php-cli php-fpm
  check "$name: .deb ($(basename "$deb"))" "$name-php" bash -c "$(in_project bash scripts/package-check.sh deb "$deb")"
  check "$name: PIE tarball + install.sh ($(basename "$tgz"))" "$name-php" \
    bash -c "$(in_project bash scripts/package-check.sh tgz "$tgz")"
  check "$name: make install / make uninstall" "$name-php" bash -c "apt-get install -y -qq --no-install-recommends make \
    >/dev/null && $(in_project CARGO_TARGET_DIR="$PWD/$build_dir" bash scripts/package-check.sh make)"
  if [ "$name" = debian13 ]; then
    usr_local="bash scripts/usr-local-layout.sh && export PATH=/usr/local/bin:\$PATH"
    check "/usr/local layout: PIE tarball + install.sh" debian13-php \
      bash -c "$(in_project "$usr_local && bash scripts/package-check.sh tgz $tgz")"
    check "/usr/local layout: make install / make uninstall" debian13-php bash -c "apt-get install -y -qq \
      --no-install-recommends make >/dev/null && $(in_project "$usr_local && CARGO_TARGET_DIR=$PWD/$build_dir \
      bash scripts/package-check.sh make")"
  fi
done
echo "test-dist: ${failures[*]:+failed: ${failures[*]}}"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]
