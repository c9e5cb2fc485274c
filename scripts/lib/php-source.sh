# shellcheck shell=bash
# Sourced, not run: fetches the upstream source of a PHP (the orig tarball of the Debian source package that ships
# it: php8.4 from Debian 13, php8.2 from Debian 12) into a directory, once. Used by scripts/php-from-source.sh (inside
# the Debian 13 root) and scripts/zts-php.sh (on the host).
#
#   source scripts/lib/php-source.sh
#   php_source 8.4|8.2 DIR MIRROR PRIVATE_APT_LIB     # DIR/php<X.Y>_*.orig.tar.xz exists afterwards
# The official php images' compiler and linker flags (their PHP_CFLAGS, PHP_CPPFLAGS and PHP_LDFLAGS), given to
# ./configure by both PHPs built here from source (scripts/zts-php.sh, scripts/php-from-source.sh), but -O1 for their
# -O2: these PHPs run tests and package checks, never a benchmark, and -O1 about halves the compile (Zend's
# zend_execute.c: 28.4 s at -O2, 13.0 s at -O1 on this machine), which .ci/run pays twice on two cores. No -g either
# (PHP's own default, -g -O2, also compiles debug information nobody here reads). The configure options, which make
# the layout and the ABI, are the images'.
PHP_IMAGE_FLAGS=(CFLAGS="-fstack-protector-strong -fpic -fpie -O1 -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64"
  CPPFLAGS="-fstack-protector-strong -fpic -fpie -O1 -D_LARGEFILE_SOURCE -D_FILE_OFFSET_BITS=64"
  LDFLAGS="-Wl,-O1 -pie")

php_source() {
  local src=${2:?usage: php_source 8.4|8.2 DIR MIRROR PRIVATE_APT_LIB}
  mkdir -p "$(dirname "$src")"
  # One fetch at a time: the host lane's ZTS build and the Debian 13 lane's NTS build may ask at once (.ci/run), and
  # a second caller must neither delete the first's download nor read it half-written. It waits, then finds it.
  (
    flock 9
    fetch_php_source "$@"
  ) 9> "$src.lock"
}

fetch_php_source() {
  local version=$1 src=$2 mirror=${3:?} lib=${4:?} suite fallback digest
  # The registry this machine reaches lacks some current source files (8.4.27 here); any X.Y.z has the same module
  # API, so an earlier orig tarball from the same pool does, checked against its pinned digest.
  case "$version" in
    8.4) suite=trixie fallback=php8.4_8.4.16.orig.tar.xz
         digest=f66f8f48db34e9e29f7bfd6901178e9cf4a1b163e6e497716dfcb8f88bcfae30 ;;
    8.2) suite=bookworm fallback=php8.2_8.2.29.orig.tar.xz
         digest=475f991afd2d5b901fb410be407d929bc00c46285d3f439a02c59e8b6fe3589c ;;
    *) echo "php-source: no source for PHP $version here (8.4, 8.2)" >&2; return 1 ;;
  esac
  ls "$src"/php"$version"_*.orig.tar.xz >/dev/null 2>&1 && return 0
  rm -rf "$src"
  # shellcheck source=private-apt.sh
  source "$lib"
  private_apt_setup "$src" "deb-src $mirror $suite main"
  apt-get "${private_apt_opts[@]}" update
  if ! (cd "$src" && apt-get "${private_apt_opts[@]}" source --download-only "php$version") >&2; then
    echo "php-source: falling back to $fallback" >&2
    curl -fsS -o "$src/$fallback" "$mirror/pool/main/p/php$version/$fallback"
    echo "$digest  $src/$fallback" | sha256sum -c --quiet
  fi
}
