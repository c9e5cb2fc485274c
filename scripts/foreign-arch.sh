#!/usr/bin/env bash
# Makes this machine run binaries of another architecture (arm64 on an x86_64 host) the way Debian does it:
# qemu-user-static's emulator registered with binfmt_misc, with the F flag, so that it also works inside a chroot.
# Installs qemu-user-static when it is missing; mounts binfmt_misc when it is not mounted.
#
#   scripts/foreign-arch.sh arm64
set -euo pipefail
arch=${1:?usage: foreign-arch.sh ARCH (e.g. arm64)}
case "$arch" in
  arm64) qemu=aarch64 ;;
  *) echo "foreign-arch: no emulator known for $arch" >&2; exit 1 ;;
esac
die() { echo "foreign-arch: $*" >&2; exit 1; }
if ! [ -f "/usr/lib/binfmt.d/qemu-$qemu.conf" ]; then
  echo "foreign-arch: installing qemu-user-static (to run $arch binaries)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq && apt-get install -y -qq --no-install-recommends qemu-user-static >/dev/null
fi
binfmt=/proc/sys/fs/binfmt_misc
[ -e "$binfmt/register" ] || mount -t binfmt_misc binfmt_misc "$binfmt" \
  || die "cannot mount binfmt_misc (this kernel or container does not offer it)"
if ! [ -e "$binfmt/qemu-$qemu" ]; then
  # The F flag (in Debian's .conf) opens the emulator now, so chroots without it can still use it.
  cat "/usr/lib/binfmt.d/qemu-$qemu.conf" > "$binfmt/register" 2>/dev/null || [ -e "$binfmt/qemu-$qemu" ] \
    || die "cannot register qemu-$qemu with binfmt_misc"
fi
grep -q '^enabled' "$binfmt/qemu-$qemu" || die "qemu-$qemu is registered but disabled ($binfmt/qemu-$qemu)"
