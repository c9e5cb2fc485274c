#!/usr/bin/env bash
# Prints the Debian mirror this machine's apt uses, read from its apt sources (deb822 .sources files and one-line
# sources.list entries), so that the Debian roots under target/roots/ download from the same place as the host:
#
#   scripts/debian-mirror.sh            # the archive (.../debian): the entry whose suites are not -security
#   scripts/debian-mirror.sh security   # the security archive (.../debian-security)
#
# Falls back to Debian's own redirector when the sources name no Debian archive.
set -euo pipefail
want=${1:-archive}

# Every (URI, suite) pair apt is configured with, one per line.
pairs() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    # deb [options] URI SUITE COMPONENT...
    sed -n 's/^[[:space:]]*deb[[:space:]]\+\(\[[^]]*\][[:space:]]\+\)\?\([^[:space:]]\+\)[[:space:]]\+\([^[:space:]]\+\).*/\2 \3/p' "$f"
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # Stanzas separated by blank lines; a stanza with Enabled: no is skipped.
    awk 'BEGIN { RS = ""; FS = "\n" }
      { uris = ""; suites = ""; types = ""; enabled = "yes"
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^URIs:/) { uris = substr($i, 6) }
          else if ($i ~ /^Suites:/) { suites = substr($i, 8) }
          else if ($i ~ /^Types:/) { types = substr($i, 7) }
          else if ($i ~ /^Enabled:/) { enabled = substr($i, 9) }
        }
        if (types !~ /(^|[[:space:]])deb([[:space:]]|$)/ || enabled ~ /no/) next
        n = split(uris, u, /[[:space:]]+/); m = split(suites, s, /[[:space:]]+/)
        for (a = 1; a <= n; a++) for (b = 1; b <= m; b++) if (u[a] != "" && s[b] != "") print u[a], s[b] }' "$f"
  done
}

# A Debian archive serves a release codename or its -updates/-security/-backports; other vendors' repositories
# (nodistro, cloud-sdk-bookworm...) are not it.
debian_suite='^(buster|bullseye|bookworm|trixie|forky|duke|sid|unstable|testing|stable|oldstable|experimental)(-updates|-security|-backports|-proposed-updates)?$'
uri=$(pairs | while read -r u s; do
  [[ $s =~ $debian_suite ]] || continue
  if [ "$want" = security ]; then [[ $s == *-security ]] && echo "$u"; else [[ $s == *-security ]] || echo "$u"; fi
done | sed -n 1p)   # sed reads to the end: head would end the pipe early (SIGPIPE, under pipefail)
if [ -z "$uri" ]; then
  [ "$want" = security ] && uri=http://deb.debian.org/debian-security || uri=http://deb.debian.org/debian
fi
echo "${uri%/}"
