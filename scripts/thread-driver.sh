#!/usr/bin/env bash
# Compiles the thread suite's multi-threaded PHP host (tests/Threads/driver.c) against a ZTS PHP with its embed SAPI:
#
#   scripts/thread-driver.sh PHP_DIR OUT [LIBDIR]
#
# PHP_DIR has bin/php-config and lib/libphp.so (scripts/zts-php.sh prints one); LIBDIR is where the driver looks for
# libphp.so when it runs (default PHP_DIR/lib; /usr/local/lib for the driver run in a root where that PHP is
# installed, scripts/test-dist.sh). CC: the compiler (aarch64-linux-gnu-gcc for the arm64 PHP).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${1:?usage: thread-driver.sh PHP_DIR OUT [LIBDIR]}; out=${2:?usage: thread-driver.sh PHP_DIR OUT [LIBDIR]}
dir=$(realpath "$dir")
libdir=${3:-$dir/lib}
# -D_GNU_SOURCE: PHP's headers use glibc's memrchr and mempcpy.
# shellcheck disable=SC2046 # php-config prints one -I per word
"${CC:-gcc}" -D_GNU_SOURCE -O1 -g -Wall -Werror -o "$out" tests/Threads/driver.c \
  $("$dir/bin/php-config" --includes) -L"$dir/lib" -lphp -Wl,-rpath,"$libdir" -lpthread
