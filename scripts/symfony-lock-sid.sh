#!/usr/bin/env bash
# Unpacks Debian sid's php-symfony-lock (symfony/lock 7.4), php-symfony-console of the same release (for its
# LockableTrait, which takes a LockFactory since 7.1) and php-symfony-semaphore (the semaphores' interop peer) into
# DIR without installing anything: apt reads sid's package
# list into a private state directory, downloads the three .debs, and dpkg-deb extracts them. Its autoload.php
# finds psr/log and symfony/deprecation-contracts where Debian installs them (links to /usr/share/php).
# Prints the path of the unpacked autoload.php. (The registry this machine reaches serves sid as a dated snapshot,
# whose Release file is past its Valid-Until; the check is off for this one private list only.)
#
#   scripts/symfony-lock-sid.sh DIR
set -euo pipefail
dir=$(realpath -m "${1:?usage: symfony-lock-sid.sh DIR}")
mirror=${DEBIAN_MIRROR:-$(bash "$(dirname "$0")/debian-mirror.sh")}   # the apt sources this system (or root) uses
autoload=$dir/usr/share/php/Symfony/Component/Lock/autoload.php
trait=$dir/usr/share/php/Symfony/Component/Console/Command/LockableTrait.php
semaphore=$dir/usr/share/php/Symfony/Component/Semaphore/autoload.php
if [ -f "$autoload" ] && [ -f "$trait" ] && [ -f "$semaphore" ] && [ -f "$dir/version" ]; then
  echo "$autoload"; exit 0
fi
rm -rf "$dir"; mkdir -p "$dir/deb"
# shellcheck source=lib/private-apt.sh
source "$(dirname "$0")/lib/private-apt.sh"
private_apt_setup "$dir/apt" "deb $mirror sid main" -o "Debug::NoLocking=1" -o "Acquire::Check-Valid-Until=false"
apt-get "${private_apt_opts[@]}" update >&2
version=$(apt-cache "${private_apt_opts[@]}" show php-symfony-lock | sed -n 's/^Version: //p' | sort -V | tail -1)
case "$version" in 7.4*) ;; *) echo "symfony-lock-sid: sid has php-symfony-lock $version, not 7.4" >&2; exit 1 ;; esac
(cd "$dir/deb" && apt-get "${private_apt_opts[@]}" download "php-symfony-lock=$version" "php-symfony-console=$version" \
  "php-symfony-semaphore=$version" >&2)
dpkg-deb -x "$dir"/deb/php-symfony-lock_*.deb "$dir"
dpkg-deb -x "$dir"/deb/php-symfony-console_*.deb "$dir"
dpkg-deb -x "$dir"/deb/php-symfony-semaphore_*.deb "$dir"
# Its dependencies, by the relative paths its autoload.php requires, from the packages of this system.
for dep in Psr/Log Symfony/Contracts/Deprecation; do
  if [ ! -e "$dir/usr/share/php/$dep" ]; then
    mkdir -p "$(dirname "$dir/usr/share/php/$dep")"
    ln -s "/usr/share/php/$dep" "$dir/usr/share/php/$dep"
  fi
done
rm -rf "$dir/apt" "$dir/deb"
echo "$version" > "$dir/version"
echo "$autoload"
