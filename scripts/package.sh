#!/usr/bin/env bash
# Packages one build of the extension for the PHP it was built against (run on that platform: the host, or inside
# the Debian 13 root; scripts/dist.sh runs it on each):
#
#   scripts/package.sh SO OUTDIR
#
# writes into OUTDIR
#   php_deadbolt-<version>_php<X.Y>-x86_64-linux-glibc-nts.tgz   PIE's name for a pre-built binary: deadbolt.so,
#                                                                 deadbolt.ini, the stubs, LICENSE, install.sh
#   php<X.Y>-deadbolt_<version>-1_amd64.deb                       laid out like Debian's own php<X.Y>-<ext> packages
#   php<X.Y>-deadbolt.glibc                                       the glibc symbol versions the .so needs
# and refuses to package a .so that needs a glibc symbol newer than this platform's glibc, which is the oldest
# glibc the packages claim to support (Debian 12: 2.36).
set -euo pipefail
cd "$(dirname "$0")/.."
so=${1:?usage: package.sh SO OUTDIR}; out=${2:?usage: package.sh SO OUTDIR}
[ -f "$so" ] || { echo "package: no $so (build first)" >&2; exit 1; }
php=$(bash scripts/php-binary.sh)
fact() { "$php" -n -r "echo $1;"; }
[ "$(fact '(int) PHP_ZTS')" = 0 ] || { echo "package: $php is a thread-safe (ZTS) build; Deadbolt packages NTS PHP only" >&2; exit 1; }
phpver=$(fact 'PHP_MAJOR_VERSION.".".PHP_MINOR_VERSION')
api=$(basename "$(fact PHP_EXTENSION_DIR)")
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
arch=$(uname -m)
[ "$arch" = x86_64 ] || { echo "package: only x86_64 packages are made here (this is $arch)" >&2; exit 1; }
mkdir -p "$out"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# The shipped .so: stripped of its debug symbols (the build tree keeps them).
cp "$so" "$work/deadbolt.so"
strip --strip-unneeded "$work/deadbolt.so"
chmod 0644 "$work/deadbolt.so"

# glibc: the newest symbol version the .so needs must not be newer than this platform's glibc.
needed=$(objdump -T "$work/deadbolt.so" | grep -o 'GLIBC_[0-9][0-9.]*' | sed 's/GLIBC_//' | sort -uV)
newest=$(echo "$needed" | tail -1)
glibc=$(getconf GNU_LIBC_VERSION | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$newest" "$glibc" | sort -V | tail -1)" != "$glibc" ]; then
  echo "package: the .so needs GLIBC_$newest, newer than this platform's glibc $glibc" >&2; exit 1
fi
{
  echo "php $phpver (API $api), built on glibc $glibc ($(. /etc/os-release; echo "$PRETTY_NAME"))"
  echo "newest glibc symbol version needed: GLIBC_$newest"
  echo "all: $(echo "$needed" | sed 's/^/GLIBC_/' | tr '\n' ' ')"
  echo "libraries: $(objdump -p "$work/deadbolt.so" | awk '/NEEDED/ {print $2}' | tr '\n' ' ')"
} > "$out/php$phpver-deadbolt.glibc"

ini_text='; Deadbolt: Symfony-Lock-compatible locks for PHP, native
; priority=20
extension=deadbolt.so'

# --- The PIE tarball: files at the top level, as PIE looks for <extension>.so there.
tgz_name=php_deadbolt-${version}_php${phpver}-${arch}-linux-glibc-nts.tgz
stage=$work/tgz
mkdir -p "$stage"
cp "$work/deadbolt.so" "$stage/"
printf '%s\n' "$ini_text" > "$stage/deadbolt.ini"
cp -r stubs "$stage/stubs"
cp LICENSE "$stage/LICENSE"
install -m 0755 scripts/install-binary.sh "$stage/install.sh"
printf 'Deadbolt %s for PHP %s (API %s, NTS, x86_64 glibc >= %s).\nInstall: ./install.sh install deadbolt.so   (or: make install from the source tree)\nUninstall: ./install.sh uninstall\n' \
  "$version" "$phpver" "$api" "$newest" > "$stage/README"
tar --owner=0 --group=0 --numeric-owner --sort=name --mtime='@0' -czf "$out/$tgz_name" -C "$stage" .

# --- The .deb: php<X.Y>-deadbolt, like Debian's php<X.Y>-redis: the .so in /usr/lib/php/<API>, the ini in
# /etc/php/<X.Y>/mods-available (a conffile), enabled for every SAPI on install, disabled on removal.
pkg=php$phpver-deadbolt
deb=$work/deb
mkdir -p "$deb/DEBIAN" "$deb/usr/lib/php/$api" "$deb/etc/php/$phpver/mods-available" "$deb/usr/share/doc/$pkg"
cp "$work/deadbolt.so" "$deb/usr/lib/php/$api/deadbolt.so"
printf '%s\n' "$ini_text" > "$deb/etc/php/$phpver/mods-available/deadbolt.ini"
cp LICENSE "$deb/usr/share/doc/$pkg/copyright"
cp -r stubs "$deb/usr/share/doc/$pkg/stubs"
# Library dependencies as Debian computes them (dpkg-shlibdeps reads the .so's NEEDED entries and the shlibs
# files of the packages that provide them).
mkdir -p "$work/shlibs/debian"
printf 'Source: deadbolt\n\nPackage: %s\nArchitecture: any\n' "$pkg" > "$work/shlibs/debian/control"
libdeps=$(cd "$work/shlibs" && dpkg-shlibdeps -O "$deb/usr/lib/php/$api/deadbolt.so" 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
[ -n "$libdeps" ] || { echo "package: dpkg-shlibdeps found no dependencies for the .so" >&2; exit 1; }
installed_size=$(du -sk --exclude=DEBIAN "$deb" | cut -f1)
cat > "$deb/DEBIAN/control" <<EOF
Package: $pkg
Version: $version-1
Architecture: amd64
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
fi
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
chmod 0755 "$deb/DEBIAN/postinst" "$deb/DEBIAN/postrm"
deb_name=${pkg}_${version}-1_amd64.deb
dpkg-deb --root-owner-group -Zxz --build "$deb" "$out/$deb_name" >/dev/null

echo "package: $out/$tgz_name ($(du -k "$out/$tgz_name" | cut -f1) KiB)"
echo "package: $out/$deb_name ($(du -k "$out/$deb_name" | cut -f1) KiB), Depends: php$phpver-common, phpapi-$api, $libdeps"
echo "package: needs glibc >= $newest (built on $glibc)"
