#!/usr/bin/env bash
# Packages one build of the extension for the PHP it was built against:
#
#   scripts/package.sh SO OUTDIR [FACTS]
#
# FACTS, when given, is a file of phpver=, api=, zts= and arch= lines describing the PHP the .so was built for (a
# cross build: scripts/build-arm64.sh writes it from that PHP itself); without it this platform's PHP says them.
# Writes into OUTDIR
#   php_deadbolt-<version>_php<X.Y>-<x86_64|arm64>-linux-glibc-<nts|zts>.tgz   PIE's name for a pre-built binary:
#                                                      deadbolt.so, deadbolt.ini, the stubs, LICENSE, install.sh,
#                                                      bin/deadbolt (the operator's command, docs/CLI.md)
#   php<X.Y>-deadbolt_<version>-1_<amd64|arm64>.deb    laid out like Debian's own php<X.Y>-<ext> packages (NTS only)
#   php<X.Y>-deadbolt-<arch>.glibc                      the glibc symbol versions the .so needs
# The deadbolt command is the one built beside the .so (target/release/deadbolt: make build builds both); a build
# without one (a cross or ZTS build) is packaged without it, and says so.
# and refuses to package a .so that needs a glibc symbol newer than the oldest glibc the packages support: Debian
# 12's 2.36 (DEADBOLT_GLIBC_FLOOR), whichever Debian the .so was built on. DEADBOLT_PACKAGE_KINDS=tgz leaves the
# .deb out (a PHP no Debian release ships yet: 8.5).
set -euo pipefail
cd "$(dirname "$0")/.."
so=${1:?usage: package.sh SO OUTDIR [FACTS]}; out=${2:?usage: package.sh SO OUTDIR [FACTS]}; facts=${3:-}
[ -f "$so" ] || { echo "package: no $so (build first)" >&2; exit 1; }
floor=${DEADBOLT_GLIBC_FLOOR:-2.36}
if [ -n "$facts" ]; then
  phpver=$(sed -n 's/^phpver=//p' "$facts"); api=$(sed -n 's/^api=//p' "$facts")
  zts=$(sed -n 's/^zts=//p' "$facts"); debarch=$(sed -n 's/^arch=//p' "$facts")
else
  php=$(bash scripts/php-binary.sh)
  fact() { "$php" -n -r "echo $1;"; }
  phpver=$(fact 'PHP_MAJOR_VERSION.".".PHP_MINOR_VERSION'); api=$(basename "$(fact PHP_EXTENSION_DIR)")
  zts=$(fact '(int) PHP_ZTS'); debarch=$(dpkg --print-architecture)
fi
# A thread-safe PHP's build gets PIE's -zts tarball and no .deb: Debian ships no ZTS PHP.
threads=nts; [ "$zts" = 0 ] || threads=zts
# PIE names the machine x86_64 or arm64; Debian names it amd64 or arm64. The binutils are the
# ones for the .so's machine (an arm64 .so is packaged on x86_64 with the aarch64 cross binutils).
case "$debarch" in
  amd64) arch=x86_64; tools="" ;;
  arm64) arch=arm64; tools=aarch64-linux-gnu-; [ "$(dpkg --print-architecture)" = arm64 ] && tools="" ;;
  *) echo "package: no packages for $debarch" >&2; exit 1 ;;
esac
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The shipped .so: stripped of its debug symbols (the build tree keeps them).
cp "$so" "$work/deadbolt.so"
"${tools}strip" --strip-unneeded "$work/deadbolt.so"
chmod 0644 "$work/deadbolt.so"
cli=$(dirname "$so")/deadbolt
if [ -f "$cli" ]; then
  install -m 0755 "$cli" "$work/deadbolt"
  "${tools}strip" --strip-unneeded "$work/deadbolt"
else
  echo "package: no deadbolt command beside $so: packaged without it" >&2
fi

# glibc: the newest symbol version the .so needs must not be newer than the floor.
shipped=("$work/deadbolt.so"); [ -f "$work/deadbolt" ] && shipped+=("$work/deadbolt")
needed=$("${tools}objdump" -T "${shipped[@]}" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV)
newest=$(echo "$needed" | tail -1)
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$newest" "$floor" | sort -V | tail -1)" != "$floor" ]; then
  echo "package: the .so (or the deadbolt command) needs GLIBC_$newest, newer than glibc $floor (Debian 12), the oldest supported" >&2; exit 1
fi
{
  echo "php $phpver (API $api), $debarch, built on glibc $glibc ($(. /etc/os-release; echo "$PRETTY_NAME"))"
  echo "newest glibc symbol version needed: GLIBC_$newest (floor: $floor)"
  echo "all: $(echo "$needed" | sed 's/^/GLIBC_/' | tr '\n' ' ')"
  echo "libraries: $("${tools}objdump" -p "$work/deadbolt.so" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')"
} > "$out/php$phpver-deadbolt-$debarch.glibc"

ini_text='; Deadbolt: Symfony-Lock-compatible locks for PHP, native
; priority=20
extension=deadbolt.so'

# --- The PIE tarball: files at the top level, as PIE looks for <extension>.so there.
tgz_name=php_deadbolt-${version}_php${phpver}-${arch}-linux-glibc-${threads}.tgz
stage=$work/tgz
mkdir -p "$stage"
cp "$work/deadbolt.so" "$stage/"
printf '%s\n' "$ini_text" > "$stage/deadbolt.ini"
cp -r stubs "$stage/stubs"
cp LICENSE "$stage/LICENSE"
install -m 0755 scripts/install-binary.sh "$stage/install.sh"
if [ -f "$work/deadbolt" ]; then install -D -m 0755 "$work/deadbolt" "$stage/bin/deadbolt"; fi
printf 'Deadbolt %s for PHP %s (API %s, %s, %s glibc >= %s).\nInstall: ./install.sh install deadbolt.so   (or: make install from the source tree)\nUninstall: ./install.sh uninstall\n' \
  "$version" "$phpver" "$api" "${threads^^}" "$arch" "$newest" > "$stage/README"
if [ -f "$stage/bin/deadbolt" ]; then
  printf 'The operator'"'"'s command (who holds a lock, forced release, metrics): bin/deadbolt --help (copy it to /usr/local/bin).\n' >> "$stage/README"
fi
tar --owner=0 --group=0 --numeric-owner --sort=name --mtime='@0' -czf "$out/$tgz_name" -C "$stage" .

if [ "${DEADBOLT_PACKAGE_KINDS:-tgz deb}" = tgz ] || [ "$threads" = zts ]; then
  echo "package: $out/$tgz_name ($(du -k "$out/$tgz_name" | cut -f1) KiB), needs glibc >= $newest (floor $floor)"
  exit 0
fi

# --- The .deb: php<X.Y>-deadbolt, like Debian's php<X.Y>-redis: the .so in /usr/lib/php/<API>, the ini in
# /etc/php/<X.Y>/mods-available (a conffile), enabled for every SAPI on install, disabled on removal.
pkg=php$phpver-deadbolt
deb=$work/deb
mkdir -p "$deb/DEBIAN" "$deb/usr/lib/php/$api" "$deb/etc/php/$phpver/mods-available" "$deb/usr/share/doc/$pkg"
cp "$work/deadbolt.so" "$deb/usr/lib/php/$api/deadbolt.so"
printf '%s\n' "$ini_text" > "$deb/etc/php/$phpver/mods-available/deadbolt.ini"
cp LICENSE "$deb/usr/share/doc/$pkg/copyright"
# The command goes under a path of this package's own, and /usr/bin/deadbolt is an alternative (postinst): the
# packages of two PHP versions install side by side, each offering the same command.
cli_path=/usr/lib/deadbolt/php$phpver/deadbolt
if [ -f "$work/deadbolt" ]; then install -D -m 0755 "$work/deadbolt" "$deb$cli_path"; fi
cp -r stubs "$deb/usr/share/doc/$pkg/stubs"
# Library dependencies as Debian computes them (dpkg-shlibdeps reads the .so's NEEDED entries and the shlibs
# files of the packages that provide them).
mkdir -p "$work/shlibs/debian"
printf 'Source: deadbolt\n\nPackage: %s\nArchitecture: any\n' "$pkg" > "$work/shlibs/debian/control"
libdeps=$(cd "$work/shlibs" && DEB_HOST_ARCH=$debarch dpkg-shlibdeps -O "$deb/usr/lib/php/$api/deadbolt.so" $([ -f "$deb$cli_path" ] && echo "$deb$cli_path") 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$libdeps" ] || { echo "package: dpkg-shlibdeps found no dependencies for the .so" >&2; exit 1; }
installed_size=$(du -sk --exclude=DEBIAN "$deb" | cut -f1)
cat > "$deb/DEBIAN/control" <<EOF
Package: $pkg
Version: $version-1
Architecture: $debarch
Maintainer: Deadbolt developers <deadbolt@localhost>
Installed-Size: $installed_size
Depends: php$phpver-common, phpapi-$api, $libdeps
Provides: php-deadbolt
Section: php
Priority: optional
Description: Symfony-Lock-compatible locks for PHP $phpver, native
 Deadbolt gives PHP the lock API of Symfony Lock (LockFactory, Lock, Key, flock,
 Redis and in-memory stores) with an engine written in Rust: deadlines, direct
 hand-over to waiters, fork safety, fencing tokens and metrics. Wire- and
 disk-compatible with symfony/lock.
EOF
echo "/etc/php/$phpver/mods-available/deadbolt.ini" > "$deb/DEBIAN/conffiles"
cat > "$deb/DEBIAN/postinst" <<EOF
#!/bin/sh
set -e
# Enable for every SAPI of PHP $phpver (cli, fpm, apache2...), as Debian's own extension packages do.
if [ "\$1" = configure ]; then
    if [ -e /usr/lib/php/php-maintscript-helper ]; then
        . /usr/lib/php/php-maintscript-helper
        php_invoke enmod $phpver ALL deadbolt || exit 1
    else
        phpenmod -v $phpver -s ALL deadbolt
    fi
    if [ -x $cli_path ]; then
        update-alternatives --install /usr/bin/deadbolt deadbolt $cli_path 10
    fi
fi
EOF
cat > "$deb/DEBIAN/prerm" <<EOF
#!/bin/sh
set -e
if [ "\$1" = remove ] || [ "\$1" = deconfigure ]; then
    update-alternatives --remove deadbolt $cli_path 2>/dev/null || true
fi
exit 0
EOF
cat > "$deb/DEBIAN/postrm" <<EOF
#!/bin/sh
set -e
if [ "\$1" = remove ] && [ -e /usr/lib/php/php-maintscript-helper ]; then
    . /usr/lib/php/php-maintscript-helper
    php_invoke dismod $phpver ALL deadbolt || exit 1
fi
if [ "\$1" = purge ]; then
    # Links to the ini that a removal left behind (the ini itself is a conffile: dpkg removes it on purge).
    find /etc/php/$phpver -xtype l 2>/dev/null | while read -r link; do
        [ "\$(basename "\$(readlink -m "\$link")")" = deadbolt.ini ] && rm -f "\$link"
    done
    # What php_invoke recorded about deadbolt, and the record directories that only held that.
    rm -f /var/lib/php/modules/$phpver/*/*/deadbolt
    rmdir --ignore-fail-on-non-empty /var/lib/php/modules/$phpver/*/*_by_* 2>/dev/null || true
fi
exit 0
EOF
chmod 0755 "$deb/DEBIAN/postinst" "$deb/DEBIAN/prerm" "$deb/DEBIAN/postrm"
deb_name=${pkg}_${version}-1_${debarch}.deb
dpkg-deb --root-owner-group -Zxz --build "$deb" "$out/$deb_name" >/dev/null

echo "package: $out/$tgz_name ($(du -k "$out/$tgz_name" | cut -f1) KiB)"
echo "package: $out/$deb_name ($(du -k "$out/$deb_name" | cut -f1) KiB), Depends: php$phpver-common, phpapi-$api, $libdeps"
echo "package: needs glibc >= $newest (floor $floor; built on $glibc)"
