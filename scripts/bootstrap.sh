#!/usr/bin/env bash
# Installs the system packages Deadbolt builds and tests with, from Debian, only when missing.
# Idempotent: a second run installs nothing and takes well under a second.
set -euo pipefail

packages=(
  php8.2-cli php8.2-dev      # the PHP that loads the extension, and its headers for bindgen
  php-redis php-predis       # PHP Redis clients (interop and client-object stores)
  phpunit                    # the PHP test runner
  php-symfony-lock           # the peer for interop tests and the benchmark anchor
  redis-server               # the Redis that `make test` starts on a private port
  libclang-dev clang         # bindgen, used by ext-php-rs to read PHP's headers
  libssl-dev                 # TLS (rediss://) through the system's OpenSSL and CA store
  php8.2-fpm libfcgi-bin     # php-fpm runtime tests
  pkg-config make procps     # build glue; ps/pkill for process tests
)

missing=()
for p in "${packages[@]}"; do
  case "$p" in \#*) continue ;; esac
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# The Rust toolchain: rustup's when present (this project's machines ship one), else Debian's.
if ! command -v cargo >/dev/null 2>&1 && [ -x "$HOME/.cargo/bin/cargo" ]; then
  export PATH="$HOME/.cargo/bin:$PATH"
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "bootstrap: no cargo found; installing Debian's Rust toolchain"
  if [ "$(id -u)" -ne 0 ]; then SUDO=sudo; else SUDO=; fi
  $SUDO apt-get install -y -qq --no-install-recommends cargo rustc >/dev/null
fi
echo "bootstrap: $(php -r 'echo "PHP ", PHP_VERSION;'), $(cargo --version), $(redis-server --version | cut -d' ' -f3)"
