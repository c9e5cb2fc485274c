# shellcheck shell=bash
# Sourced, not run: apt options for reading one extra package list (Debian sid, or a deb-src line) without touching
# the system's apt state. The list, its state and its cache live in a private directory; nothing else is read.
#
#   source scripts/lib/private-apt.sh
#   private_apt_setup DIR "deb MIRROR SUITE main" [-o NAME=VALUE...]
#   apt-get "${private_apt_opts[@]}" update
#
# private_apt_setup makes DIR/lists/partial and DIR/cache/archives/partial, writes the sources line to
# DIR/sources.list and sets the array private_apt_opts: that list only (no sources.list.d), lists and cache in
# DIR, downloads as root (APT::Sandbox::User=root: DIR need not be readable by _apt), -qq, then the extra options.
private_apt_setup() {
  local dir=${1:?usage: private_apt_setup DIR SOURCES_LINE [-o NAME=VALUE...]}
  local line=${2:?usage: private_apt_setup DIR SOURCES_LINE [-o NAME=VALUE...]}
  shift 2
  mkdir -p "$dir/lists/partial" "$dir/cache/archives/partial"
  echo "$line" > "$dir/sources.list"
  private_apt_opts=(-o "Dir::Etc::SourceList=$dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
    -o "Dir::State::Lists=$dir/lists" -o "Dir::Cache=$dir/cache" -o "APT::Sandbox::User=root" -qq "$@")
}
