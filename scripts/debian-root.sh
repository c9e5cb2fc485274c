#!/usr/bin/env bash
# Debian roots under target/roots/ for the second platform and for the package tests, made with debootstrap from
# Debian's own registry and cached between runs (rebuilt when missing or when their recipe changed).
#
#   scripts/debian-root.sh ensure [--arch=ARCH] [--multiarch=ARCH] [--experimental] NAME SUITE [PACKAGE...]
#                                                            # target/roots/NAME: minbase SUITE + PACKAGEs, for ARCH
#                                                            # (default: the host's; arm64 runs under qemu-user-static
#                                                            # through binfmt_misc); --experimental adds Debian
#                                                            # experimental's list (a PACKAGE/experimental takes it
#                                                            # from there); --multiarch adds a second dpkg
#                                                            # architecture (PACKAGE:ARCH installs its packages)
#   scripts/debian-root.sh run NAME [--fresh] CMD...         # CMD in that root, as root, /proc mounted, the project
#                                                            # and the host's ~/.cargo and ~/.rustup bind-mounted
#                                                            # at their own paths
#   scripts/debian-root.sh path NAME                         # where the root lives
#   scripts/debian-root.sh unmount                           # unmounts whatever is left mounted under target/roots
#                                                            # (`make clean` runs it first)
#
# DEADBOLT_ROOT_NO_TOOLCHAIN=1 leaves ~/.cargo and ~/.rustup out (the package tests: a root with PHP only).
#
# --fresh runs CMD in a throw-away copy of the root (an overlay whose upper layer is discarded afterwards): a
# package test installs into a root that nothing else has touched, however often it runs.
# Everything mounted is unmounted again, also when CMD fails or the script is interrupted. A run killed outright
# (SIGKILL: no trap runs) leaves its mounts, among them the host's /dev and the project itself: the next run of that
# root, and `make clean`, unmount them first, since deleting through them deletes the host's device nodes and the
# checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
PROJECT=$PWD
ROOTS=$PROJECT/target/roots
# The host's own Debian mirror, as its apt sources name it (DEBIAN_MIRROR overrides).
MIRROR=${DEBIAN_MIRROR:-$(bash scripts/debian-mirror.sh)}
HOST_ARCH=$(dpkg --print-architecture)

die() { echo "debian-root: $*" >&2; exit 1; }

# Unmounts everything below $1, deepest first. A root is never removed while anything is mounted in it: a
# bind-mounted project would be deleted with it.
unmount_below() {
  local dir=$1 m
  for m in $(findmnt -rn -o TARGET | grep -F "$dir" | sort -r); do
    case "$m" in "$dir"|"$dir"/*) umount -l "$m" 2>/dev/null || true ;; esac
  done
}

remove_root() {
  local dir=$1
  unmount_below "$dir"
  if findmnt -rn -o TARGET | grep -F "$dir/" >/dev/null; then die "$dir still has mounts; not removing it"; fi
  rm -rf --one-file-system "$dir"
}

ensure() {
  local arch=$HOST_ARCH experimental=0 multiarch=""
  while [[ ${1:-} == --* ]]; do
    case "$1" in
      --arch=*) arch=${1#--arch=} ;;
      --multiarch=*) multiarch=${1#--multiarch=} ;;
      --experimental) experimental=1 ;;
      *) die "ensure: unknown option $1" ;;
    esac
    shift
  done
  local name=$1 suite=$2; shift 2
  local dir=$ROOTS/$name recipe
  recipe="$suite+updates+security minbase $arch+$multiarch experimental=$experimental $MIRROR $*"
  local emulated=0
  [ "$arch" = "$HOST_ARCH" ] && [ -z "$multiarch" ] || { emulated=1; recipe+=" php-jit-off fast-config-tools"; }
  # A ready root is used as it is, without waiting for its lock (a long run in it holds that).
  ready() { [ -f "$dir/.deadbolt-root" ] && [ "$(cat "$dir/.deadbolt-root")" = "$recipe" ]; }
  ready && return 0
  lock_root "$name"
  ready && return 0
  command -v debootstrap >/dev/null || die "debootstrap is not installed (apt-get install debootstrap)"
  for foreign in "$arch" $multiarch; do
    [ "$foreign" = "$HOST_ARCH" ] || bash scripts/foreign-arch.sh "$foreign"
  done
  [ -d "$dir" ] && remove_root "$dir"
  mkdir -p "$ROOTS"
  local start=$SECONDS
  echo "debian-root: debootstrap --variant=minbase --arch=$arch $suite $dir"
  debootstrap --variant=minbase --arch="$arch" "$suite" "$dir.tmp" "$MIRROR" > "$ROOTS/$name.debootstrap.log" 2>&1 \
    || { tail -20 "$ROOTS/$name.debootstrap.log" >&2; remove_root "$dir.tmp"; die "debootstrap $suite failed"; }
  mv "$dir.tmp" "$dir"
  write_sources "$dir" "$suite" "$experimental"
  # Services must not start inside the root: package scripts would try to launch redis-server and php-fpm.
  printf '#!/bin/sh\nexit 101\n' > "$dir/usr/sbin/policy-rc.d"
  chmod 0755 "$dir/usr/sbin/policy-rc.d"
  [ -z "$multiarch" ] || chroot "$dir" dpkg --add-architecture "$multiarch"
  # A throw-away root: dpkg need not fsync every file it unpacks (under qemu, and beside other builds, those syncs
  # are most of an install's time).
  echo force-unsafe-io > "$dir/etc/dpkg/dpkg.cfg.d/90deadbolt-unsafe-io"
  [ "$emulated" = 0 ] || fast_config_tools "$dir"
  if (($#)); then
    echo "debian-root: apt-get install $* (in $name)"
    in_root "$name" 0 sh -c 'export DEBIAN_FRONTEND=noninteractive; apt-get update -qq &&
      apt-get install -y -qq --no-install-recommends "$@" >/dev/null' sh "$@"
  fi
  # PHP's JIT under qemu 10's emulation crashes at times (php8.4 -m with opcache and the JIT on: 7 segfaults in 12
  # runs; php-fpm8.4 -m with the JIT off: none in 36): an emulated root's PHPs run with the JIT off. Deadbolt never meets the JIT.
  if [ "$emulated" = 1 ]; then
    for conf in "$dir"/etc/php/*/*/conf.d; do
      [ -d "$conf" ] && echo 'opcache.jit=disable' > "$conf/99-deadbolt-emulated-no-jit.ini"
    done
  fi
  echo "$recipe" > "$dir/.deadbolt-root"
  echo "debian-root: $name ready in $((SECONDS - start)) s"
}

# An emulated root's package configuration tools. Every PHP package's maintainer script registers each of its ini files
# with ucf, which asks debconf (perl, seconds to start under qemu), and enables each module for each SAPI with phpquery
# and phpenmod (shell scripts of dozens of processes each): php8.4-common's 17 modules took 268 s of a root's ~13
# minutes. In a throw-away root nothing is ever upgraded or merged, so a fresh install's outcome is all that is needed,
# and these do it in the shell itself, leaving the state Debian's tools leave:
#   ucf     copies the new file where there is none; ucfr does nothing;
#   phpenmod -m (a maintainer script's call) links the module's ini into each SAPI's conf.d under its "; priority="
#           (20 by default) and records it (/var/lib/php/modules/V/SAPI/enabled_by_maint/MOD, registry/MOD with -r);
#   phpquery answers what phpenmod and the maintainer scripts ask: the versions (-V), a version's SAPIs (-S), a
#           module's state (-q -m: 0 enabled, 1 not, 32/33 disabled by the admin/a maintainer script, 34 a changed link).
# Any other call (phpdismod, the link to phpenmod; a phpenmod without -m, as Deadbolt's package and install scripts
# run; phpquery -M) runs Debian's own program, diverted aside (dpkg-divert) before its package is installed, under its
# own name so that it knows whether it enables or disables.
fast_config_tools() {
  local dir=$1 tool
  for tool in /usr/bin/ucf /usr/bin/ucfr /usr/sbin/phpquery /usr/sbin/phpenmod; do
    chroot "$dir" dpkg-divert --quiet --local --rename --add "$tool"
  done
  mkdir -p "$dir/usr/lib/deadbolt-debian-tools"
  for tool in phpenmod phpdismod phpquery; do
    ln -sfn "/usr/sbin/${tool/phpdismod/phpenmod}.distrib" "$dir/usr/lib/deadbolt-debian-tools/$tool"
  done
  cat > "$dir/usr/bin/ucf" <<'TOOL'
#!/bin/sh
# A throw-away root's ucf (scripts/debian-root.sh): the new file copied where there is none, an existing one kept.
case "${1:-}" in --purge|-p) exit 0 ;; esac
while [ $# -gt 2 ]; do shift; done
[ $# -eq 2 ] || exit 0
[ -e "$2" ] || cp "$1" "$2"
TOOL
  printf '#!/bin/sh\n# A throw-away root'"'"'s ucfr (scripts/debian-root.sh): nothing to register.\nexit 0\n' > "$dir/usr/bin/ucfr"
  cat > "$dir/usr/sbin/phpquery" <<'TOOL'
#!/bin/sh
# A throw-away root's phpquery (scripts/debian-root.sh): the versions, the SAPIs and a module's state, as Debian's.
version= sapi= mod= action=check quiet=
for arg in "$@"; do case $arg in -M|-d) exec /usr/lib/deadbolt-debian-tools/phpquery "$@" ;; esac; done
while getopts dqs:m:SMv:V opt; do
  case $opt in
    v) version=$OPTARG ;; s) sapi=$OPTARG ;; m) mod=$OPTARG ;; V) action=versions ;; S) action=sapis ;;
    q) quiet=yes ;; *) exec /usr/lib/deadbolt-debian-tools/phpquery "$@" ;;
  esac
done
# A person's question (its answer is worded): Debian's own.
[ "$action" != check ] || [ -n "$quiet" ] || exec /usr/lib/deadbolt-debian-tools/phpquery "$@"
case $action in
  versions) for d in /usr/lib/php/*[0-9].[0-9]; do [ -d "$d" ] && echo "${d##*/}"; done | sort -rn; exit 0 ;;
  sapis) for d in /usr/lib/php/"$version"/sapi/*; do [ -e "$d" ] && echo "${d##*/}"; done; exit 0 ;;
esac
ini=/etc/php/$version/mods-available/$mod.ini
[ -r "$ini" ] || exit 1
priority=$(sed -ne 's/^;[[:space:]]*priority[[:space:]]*=[[:space:]]*\([0-9]\+\)[[:space:]]*$/\1/p; /^[0-9]\+$/q' "$ini")
link=/etc/php/$version/$sapi/conf.d/${priority:-20}-$mod.ini state=/var/lib/php/modules/$version/$sapi
if [ -e "$link" ]; then
  [ -h "$link" ] || exit 0
  [ "$(readlink "$link")" = "$ini" ] && exit 0
  exit 34
fi
[ -e "$state/disabled_by_admin/$mod" ] && exit 32
[ -e "$state/disabled_by_maint/$mod" ] && exit 33
exit 1
TOOL
  cat > "$dir/usr/sbin/phpenmod" <<'TOOL'
#!/bin/sh
# A throw-away root's phpenmod (scripts/debian-root.sh): a maintainer script's enabling, as Debian's does it.
maint= version= sapis= register=
[ "${0##*/}" = phpenmod ] && case " $* " in *" -m "*) maint=yes ;; esac
[ -n "$maint" ] || exec "/usr/lib/deadbolt-debian-tools/${0##*/}" "$@"
while getopts pfv:s:mqr opt; do
  case $opt in v) version=$OPTARG ;; s) sapis="$sapis $OPTARG" ;; r) register=yes ;; m|q) ;; *) exec "/usr/lib/deadbolt-debian-tools/${0##*/}" "$@" ;; esac
done
shift $((OPTIND - 1))
[ -n "$version" ] && [ "$version" != ALL ] || exec "/usr/lib/deadbolt-debian-tools/${0##*/}" "$@"
case " $sapis " in *" ALL "*|"  ") sapis=$(phpquery -S -v "$version") ;; esac
for mod in "$@"; do
  mod=${mod%%/*} ini=/etc/php/$version/mods-available/$mod.ini
  [ -r "$ini" ] || { echo "WARNING: Module $mod ini file doesn't exist under /etc/php/$version/mods-available" >&2; continue; }
  for sapi in $sapis; do
    rc=0; phpquery -q -v "$version" -s "$sapi" -m "$mod" || rc=$?
    case $rc in 0|1|33) ;; *) continue ;; esac
    priority=$(sed -ne 's/^;[[:space:]]*priority[[:space:]]*=[[:space:]]*\([0-9]\+\)[[:space:]]*$/\1/p; /^[0-9]\+$/q' "$ini")
    conf=/etc/php/$version/$sapi/conf.d state=/var/lib/php/modules/$version/$sapi
    [ -d "$conf" ] || continue
    [ -h "$conf/${priority:-20}-$mod.ini" ] || ln -s "$ini" "$conf/${priority:-20}-$mod.ini"
    [ -e "$state/enabled_by_admin/$mod" ] && continue
    rm -f "$state/disabled_by_admin/$mod" "$state/disabled_by_maint/$mod"
    mkdir -p "$state/enabled_by_maint" && touch "$state/enabled_by_maint/$mod"
  done
  [ -z "$register" ] || { mkdir -p "/var/lib/php/modules/$version/registry" && touch "/var/lib/php/modules/$version/registry/$mod"; }
done
exit 0
TOOL
  chmod 0755 "$dir/usr/bin/ucf" "$dir/usr/bin/ucfr" "$dir/usr/sbin/phpquery" "$dir/usr/sbin/phpenmod"
}

# The suite with its point-release updates and security updates, as an installed Debian has them; sid has
# neither. Experimental's list is added with its own low priority: only what is asked for by name comes from it.
write_sources() {
  local dir=$1 suite=$2 experimental=$3
  local security
  security=${DEBIAN_SECURITY_MIRROR:-$(bash scripts/debian-mirror.sh security)}
  if [ "$suite" = sid ] || [ "$suite" = unstable ]; then
    printf 'deb %s %s main\n' "$MIRROR" "$suite"
  else
    printf 'deb %s %s main\ndeb %s %s-updates main\ndeb %s %s-security main\n' \
      "$MIRROR" "$suite" "$MIRROR" "$suite" "$security" "$suite"
  fi > "$dir/etc/apt/sources.list"
  [ "$experimental" = 0 ] || printf 'deb %s experimental main\n' "$MIRROR" >> "$dir/etc/apt/sources.list"
  # The registry this machine reaches serves a frozen copy of Debian: sid's and experimental's Release files are
  # past their Valid-Until (a week) there, and apt would refuse them. The signatures are still checked.
  echo 'Acquire::Check-Valid-Until "false";' > "$dir/etc/apt/apt.conf.d/90deadbolt-frozen-registry"
}

# The root trusts the certificate authorities the host added locally (a proxy's CA: cargo and apt over https go
# through the same network as the host's).
trust_host_cas() {
  local dir=$1 ca changed=0
  [ -x "$dir/usr/sbin/update-ca-certificates" ] || return 0
  for ca in /usr/local/share/ca-certificates/*.crt; do
    [ -f "$ca" ] || continue
    cmp -s "$ca" "$dir$ca" && continue
    mkdir -p "$dir/usr/local/share/ca-certificates"
    cp "$ca" "$dir$ca"
    changed=1
  done
  [ $changed = 0 ] || chroot "$dir" update-ca-certificates >/dev/null 2>&1
}

# in_root NAME FRESH CMD...: the mounts, the command, and the unmounting.
in_root() {
  local name=$1 fresh=$2; shift 2
  local base=$ROOTS/$name dir
  [ -d "$base" ] || die "no root $name (run: scripts/debian-root.sh ensure $name ...)"
  dir=$base
  local overlay=""
  if [ "$fresh" = 1 ]; then
    overlay=$(mktemp -d "$ROOTS/.fresh-$name.XXXXXX")
    mkdir -p "$overlay/upper" "$overlay/work" "$overlay/merged"
    mount -t overlay overlay -o "lowerdir=$base,upperdir=$overlay/upper,workdir=$overlay/work" "$overlay/merged"
    dir=$overlay/merged
  fi
  [ "$fresh" = 1 ] || unmount_below "$base"   # what a killed run left (this run holds the root's lock)
  # shellcheck disable=SC2064
  trap "unmount_below '$dir'; [ -n '$overlay' ] && { umount -l '$overlay/merged' 2>/dev/null; rm -rf --one-file-system '$overlay'; }" EXIT INT TERM
  cp /etc/resolv.conf "$dir/etc/resolv.conf" 2>/dev/null || true
  [ -s "$dir/etc/hosts" ] || cp /etc/hosts "$dir/etc/hosts"   # localhost resolves (the TLS tests connect by name)
  trust_host_cas "$dir"
  mount -t proc proc "$dir/proc"
  mount --bind /dev "$dir/dev"
  mount --bind /dev/pts "$dir/dev/pts" 2>/dev/null || true
  mkdir -p "$dir/dev/shm" && mount -t tmpfs tmpfs "$dir/dev/shm"
  mount -t tmpfs tmpfs "$dir/tmp"
  local shared toolchain=("$HOME/.cargo" "$HOME/.rustup")
  # DEADBOLT_ROOT_NO_TOOLCHAIN=1: the package tests' roots see the project only, no Rust.
  [ "${DEADBOLT_ROOT_NO_TOOLCHAIN:-0}" = 1 ] && toolchain=()
  for shared in "$PROJECT" "${toolchain[@]}"; do
    [ -d "$shared" ] || continue
    mkdir -p "$dir$shared"
    mount --bind "$shared" "$dir$shared"
  done
  local rc=0
  chroot "$dir" /usr/bin/env -i HOME="$HOME" TERM="${TERM:-dumb}" LANG=C.UTF-8 CI="${CI:-}" \
    PATH="$HOME/.cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    "$@" || rc=$?
  unmount_below "$dir"
  if [ -n "$overlay" ]; then umount -l "$overlay/merged" 2>/dev/null || true; rm -rf --one-file-system "$overlay"; fi
  trap - EXIT INT TERM
  return $rc
}

# One user at a time per root: a second run would mount over the first one's mounts and unmount them under it.
lock_root() {
  mkdir -p "$ROOTS"
  exec 9>"$ROOTS/$1.lock"
  flock 9
}

cmd=${1:-}; shift || true
case "$cmd" in
  ensure)
    args=("$@"); while [[ ${1:-} == --* ]]; do shift; done
    [ $# -ge 2 ] || die "usage: ensure [--arch=ARCH] [--multiarch=ARCH] [--experimental] NAME SUITE [PACKAGE...]"
    ensure "${args[@]}" ;;
  run)
    [ $# -ge 2 ] || die "usage: run NAME [--fresh] CMD..."
    name=$1; shift; fresh=0
    if [ "$1" = --fresh ]; then fresh=1; shift; else lock_root "$name"; fi
    in_root "$name" "$fresh" "$@" ;;
  path) echo "$ROOTS/${1:?NAME}" ;;
  unmount)
    unmount_below "$ROOTS"
    if findmnt -rn -o TARGET | grep -F "$ROOTS/" >/dev/null; then die "$ROOTS still has mounts"; fi ;;
  *) die "usage: debian-root.sh ensure|run|path|unmount ..." ;;
esac
