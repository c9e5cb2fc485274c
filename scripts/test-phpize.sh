#!/usr/bin/env bash
# The source build the PHP way, as PIE and PECL-style tooling run it: a copy of the source tree (what PIE unpacks),
# then in its ext/ directory `phpize && ./configure && make && make install`, the install staged under
# INSTALL_ROOT so that the system is not touched. The staged deadbolt.so must load into this PHP and lock.
#
#   scripts/test-phpize.sh TARGET_DIR     # cargo builds into TARGET_DIR/phpize (kept between runs)
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:?usage: test-phpize.sh TARGET_DIR}
php=$(bash scripts/php-binary.sh)
php_config=${PHP_CONFIG:-$(command -v php-config)}
phpize=$(dirname "$php_config")/$(basename "$php_config" | sed 's/php-config/phpize/')
work=$(mktemp -d /tmp/deadbolt-phpize.XXXXXX)
trap 'rm -rf "$work"' EXIT
tar --exclude=./target --exclude=./.git -cf - . | tar -xf - -C "$work"
# The crates' compiled dependencies come from the main release build (scripts/seed-target.sh, when target/phpize has
# none yet): a from-scratch compile of them is make build's, already done and checked; what this
# test holds is phpize's part (configure finds cargo and the PHP, make runs cargo for it, make install stages the
# module). It saves a whole second compile of every crate (four CPU-minutes in CI).
bash scripts/seed-target.sh "$target/phpize" "$target"
start=$SECONDS
cd "$work/ext"
"$phpize" > "$work/phpize.log" 2>&1 || { cat "$work/phpize.log"; exit 1; }
CARGO_TARGET_DIR=$target/phpize ./configure --with-php-config="$php_config" > "$work/configure.log" 2>&1 \
  || { tail -30 "$work/configure.log"; exit 1; }
make > "$work/make.log" 2>&1 || { tail -30 "$work/make.log"; exit 1; }
make install INSTALL_ROOT="$work/root" > "$work/install.log" 2>&1 || { cat "$work/install.log"; exit 1; }
ext_dir=$("$php_config" --extension-dir)
so=$work/root$ext_dir/deadbolt.so
[ -f "$so" ] || { echo "test-phpize: make install staged no $so" >&2; cat "$work/install.log"; exit 1; }
out=$("$php" -n -d extension="$so" -r '
  $lock = (new Deadbolt\LockFactory(new Deadbolt\Store\InMemoryStore()))->createLock("phpize");
  echo phpversion("deadbolt"), " ", $lock->acquire() ? "acquired" : "refused";')
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$work/Cargo.toml" | head -1)
[ "$out" = "$version acquired" ] || { echo "test-phpize: the staged module did not lock (expected \"$version acquired\"): $out" >&2; exit 1; }
echo "test-phpize: phpize + configure + make + make install (staged) for $("$php" -n -r 'echo PHP_VERSION;') in $((SECONDS - start)) s; the module loads and locks ($out)"
