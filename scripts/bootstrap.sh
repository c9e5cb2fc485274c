#!/usr/bin/env bash
# Installs the system packages Deadbolt builds and tests with, from Debian, only when missing.
# Idempotent: a second run installs nothing and takes well under a second.
#
# The PHP is the distribution's default (Debian 12: 8.2, Debian 13: 8.4) through the unversioned php-* packages.
# With PHP_CONFIG=/path/to/php-configX.Y set, that PHP is used instead and no PHP package is installed for it.
set -euo pipefail

packages=(
  php-redis php-predis       # PHP Redis clients (interop and client-object stores)
  phpunit                    # the PHP test runner (Debian 12: 9.6, Debian 13: 11.5)
  php-symfony-lock           # the peer for interop tests and the benchmark anchor
  php-symfony-semaphore      # the semaphores' interop peer (tests/Semaphore)
  php-sqlite3                # symfony/lock's PdoStore on SQLite under Deadbolt's engine (the bridge's SymfonyStore)
  php-symfony-framework-bundle composer  # framework.lock wired to Deadbolt in a booted kernel (tests/Interop); the
                             # kernel's container (6.4) asks Composer 2's InstalledVersions, as in any application
  php-zip                    # Composer reads an artifact repository's zips with it (tests/Packaging, make dist's
                             # PHP package zips: scripts/php-packages.sh)
  redis-server redis-tools   # the Redis that `make test` starts on private ports
  memcached php-memcached    # MemcachedStore's server (started on private ports) and symfony/lock's MemcachedStore
  postgresql php-pgsql       # PostgreSqlStore's server (private clusters: scripts/postgres-start.sh), symfony/lock's
                             # PostgreSqlStore over PDO
  mariadb-server-core mariadb-client-core php-mysql  # PdoStore's MySQL/MariaDB server (private data directories,
                             # no service: scripts/mariadb-start.sh) and pdo_mysql, for Deadbolt and symfony/lock
  libclang-dev clang         # bindgen, used by ext-php-rs to read PHP's headers
  openssl                    # the TLS tests make their CA with it (TLS itself is rustls, in the build)
  libfcgi-bin                # cgi-fcgi drives the php-fpm runtime tests
  pkg-config make procps     # build glue; ps/pkill for process tests
  valgrind                   # make test runs a subset of the suites under valgrind
  debootstrap                # the Debian 13 root of make test-debian13, the package tests of make test-dist
  ca-certificates            # debootstrap and cargo over https
  dpkg-dev binutils          # make dist: dpkg-shlibdeps for the .deb's Depends, strip and objdump for the .so
  gcc libc6-dev xz-utils curl  # the thread suite's PHP, built from source (scripts/zts-php.sh); here, so that no
                             # other step installs packages while .ci/run's lanes run at once
)
if [ -z "${PHP_CONFIG:-}" ]; then
  packages+=(php-cli php-dev php-fpm)   # the distribution's default PHP, its headers, its FPM
fi
# Valkey is packaged from Debian 13 on; where it exists the Redis suites also run against it.
optional=(valkey-server valkey-tools)

installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep "install ok installed" >/dev/null; }

if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
export DEBIAN_FRONTEND=noninteractive
missing=()
for p in "${packages[@]}"; do installed "$p" || missing+=("$p"); done
updated=0
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  $SUDO apt-get update -qq
  updated=1
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
for p in "${optional[@]}"; do
  installed "$p" && continue
  [ $updated = 1 ] || { $SUDO apt-get update -qq; updated=1; }
  if apt-cache show "$p" >/dev/null 2>&1; then
    echo "bootstrap: installing $p"
    $SUDO apt-get install -y -qq --no-install-recommends "$p" >/dev/null
  fi
done

# The Rust toolchain: rustup's when present (this project's machines ship one), else Debian's.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "bootstrap: no cargo found; installing Debian's Rust toolchain"
  $SUDO apt-get install -y -qq --no-install-recommends cargo rustc >/dev/null
fi

php=$(bash "$(dirname "$0")/php-binary.sh")
echo "bootstrap: $("$php" -n -r 'echo "PHP ", PHP_VERSION;') ($php), $(cargo --version), $(redis-server --version | cut -d' ' -f3)"
