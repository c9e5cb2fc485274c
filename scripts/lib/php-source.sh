# shellcheck shell=bash
# Sourced, not run: fetches the upstream source of PHP 8.4 (the orig tarball of Debian 13's php8.4 source package)
# into a directory, once. Used by scripts/php-from-source.sh (inside the Debian 13 root) and scripts/zts-php.sh (on
# the host).
#
#   source scripts/lib/php-source.sh
#   php84_source DIR MIRROR PRIVATE_APT_LIB     # DIR/php8.4_*.orig.tar.xz exists afterwards
php84_source() {
  local src=${1:?usage: php84_source DIR MIRROR PRIVATE_APT_LIB}
  mkdir -p "$(dirname "$src")"
  # One fetch at a time: the host lane's ZTS build and the Debian 13 lane's NTS build may ask at once (.ci/run), and
  # a second caller must neither delete the first's download nor read it half-written. It waits, then finds it.
  (
    flock 9
    fetch_php84_source "$@"
  ) 9> "$src.lock"
}

fetch_php84_source() {
  local src=$1 mirror=${2:?} lib=${3:?}
  ls "$src"/php8.4_*.orig.tar.xz >/dev/null 2>&1 && return 0
  rm -rf "$src"
  # shellcheck source=private-apt.sh
  source "$lib"
  private_apt_setup "$src" "deb-src $mirror trixie main"
  apt-get "${private_apt_opts[@]}" update
  if ! (cd "$src" && apt-get "${private_apt_opts[@]}" source --download-only php8.4) >&2; then
    # The registry this machine reaches lacks some current source files (8.4.27 here); any 8.4.x has the same
    # module API, so an earlier orig tarball from the same pool does, checked against its pinned digest.
    local fallback=php8.4_8.4.16.orig.tar.xz
    echo "php-source: falling back to $fallback" >&2
    curl -fsS -o "$src/$fallback" "$mirror/pool/main/p/php8.4/$fallback"
    echo "f66f8f48db34e9e29f7bfd6901178e9cf4a1b163e6e497716dfcb8f88bcfae30  $src/$fallback" | sha256sum -c --quiet
  fi
}
