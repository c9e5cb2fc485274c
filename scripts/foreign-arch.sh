#!/usr/bin/env bash
# Makes this machine run binaries of another architecture (arm64 on an x86_64 host) the way Debian does it: qemu's
# user-mode emulator registered with binfmt_misc, with the F flag, so that it also works inside a chroot.
# Installs qemu-user-static when it is missing; mounts binfmt_misc when it is not mounted.
#
# Which qemu: Debian 12's (7.2) runs arm64 PHP about 3.5 times slower than Debian 13's (10.0), measured here with
# a PHP loop (3.63 s against 1.02 s), and dpkg under it as slowly: the arm64 roots and suites took most of CI's
# time. Debian 13's qemu-user is statically linked, so on a host whose own qemu is older than QEMU_MIN it is
# downloaded from Debian 13 (apt, verified with the host's keyring, into target/qemu/) and registered instead of
# the host's; the host's packages are left as they are.
#
#   scripts/foreign-arch.sh arm64
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:?usage: foreign-arch.sh ARCH (e.g. arm64)}
case "$arch" in
  arm64) qemu=aarch64 ;;
  *) echo "foreign-arch: no emulator known for $arch" >&2; exit 1 ;;
esac
QEMU_MIN=10
binfmt=/proc/sys/fs/binfmt_misc
die() { echo "foreign-arch: $*" >&2; exit 1; }

# The major version of a qemu user-mode emulator ("qemu-aarch64 version 7.2.21 (Debian ...)").
qemu_major() { "$1" --version 2>/dev/null | sed -n '1s/.* version \([0-9]\+\)\..*/\1/p'; }

# Debian 13's qemu-user unpacked into target/qemu (once); prints its binfmt .conf.
newer_qemu_conf() {
  local dir=$PWD/target/qemu apt=$PWD/target/qemu.apt
  if ! [ -x "$dir/usr/bin/qemu-$qemu" ]; then
    echo "foreign-arch: qemu $(qemu_major "/usr/bin/qemu-$qemu-static") here; fetching Debian 13's qemu-user into $dir" >&2
    rm -rf "$dir" "$apt"; mkdir -p "$apt/lists/partial" "$apt/cache/archives/partial"
    echo "deb $(bash scripts/debian-mirror.sh) trixie main" > "$apt/sources.list"
    local opts=(-qq -o APT::Sandbox::User=root -o "Dir::Etc::SourceList=$apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
      -o "Dir::State::Lists=$apt/lists" -o "Dir::Cache=$apt/cache")
    apt-get "${opts[@]}" update && (cd "$apt" && apt-get "${opts[@]}" download qemu-user) \
      || die "cannot download Debian 13's qemu-user"
    dpkg-deb -x "$apt"/qemu-user_*.deb "$dir.tmp" && mv "$dir.tmp" "$dir" && rm -rf "$apt"
  fi
  # Debian's .conf names /usr/libexec/qemu-binfmt/<arch>-binfmt-P (a link to the emulator: qemu reads from that
  # name that binfmt's P flag is on); the same link under target/qemu.
  sed "s|:/usr/libexec/|:$dir/usr/libexec/|" "$dir/usr/share/qemu/binfmt.d/qemu-$qemu.conf"
}

# The binfmt .conf to register: Debian's own, or the newer qemu's on an older host.
wanted_conf() {
  if ! [ -x "/usr/bin/qemu-$qemu-static" ]; then
    echo "foreign-arch: installing qemu-user-static (to run $arch binaries)" >&2
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
  fi
  if (($(qemu_major "/usr/bin/qemu-$qemu-static") >= QEMU_MIN)); then
    cat "/usr/lib/binfmt.d/qemu-$qemu.conf" 2>/dev/null || cat "/usr/share/qemu/binfmt.d/qemu-$qemu.conf"
  else
    newer_qemu_conf
  fi
}

[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" \
  || die "cannot mount binfmt_misc (this kernel or container does not offer it)"
conf=$(wanted_conf)
interpreter=$(echo "$conf" | awk -F: '{ print $(NF - 1) }')
if ! grep -qx "interpreter $interpreter" "$binfmt/qemu-$qemu" 2>/dev/null; then
  # Another emulator under the name (the host's older one): replaced. The F flag opens the emulator now, so
  # chroots without it can still use it.
  [ -e "$binfmt/qemu-$qemu" ] && echo -1 > "$binfmt/qemu-$qemu"
  echo "$conf" > "$binfmt/register" 2>/dev/null || die "cannot register qemu-$qemu with binfmt_misc"
  echo "foreign-arch: $arch binaries run with $interpreter" >&2
fi
grep -q '^enabled' "$binfmt/qemu-$qemu" || die "qemu-$qemu is registered but disabled ($binfmt/qemu-$qemu)"
