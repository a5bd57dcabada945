#!/usr/bin/env bash
# The single-header cpp-httplib the Windows build compiles the gui server with. Debian's
# libcpp-httplib-dev ships a split header and a Linux .so, which mingw cannot use; Debian's
# source package of the same version has the whole header. It is fetched by apt (verified
# with Debian's archive keyring) into DEST without touching this machine's apt setup, and
# unpacked with dpkg-source (Debian's patches applied). Never committed: cached in DEST.
#
#   scripts/fetch_httplib_source.sh DEST     prints DEST/include (which holds httplib.h)
set -euo pipefail
dest=$(realpath -m "${1:?usage: fetch_httplib_source.sh DEST}")
version=$(dpkg-query -W -f='${Version}' libcpp-httplib-dev 2>/dev/null || true)
if [ -z "$version" ]; then
  echo "fetch_httplib_source.sh: libcpp-httplib-dev is not installed (apt-get install libcpp-httplib-dev)" >&2
  exit 1
fi
include="$dest/include"
stamp="$include/.version"
if [ -f "$include/httplib.h" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version" ]; then
  echo "$include"; exit 0
fi
command -v dpkg-source >/dev/null || { echo "fetch_httplib_source.sh: dpkg-source is missing (apt-get install dpkg-dev)" >&2; exit 1; }
# ONNXSTREAM_DEBIAN_KEYRING: another keyring file (tests/e2e/test_scripts.py gives one).
keyring=${ONNXSTREAM_DEBIAN_KEYRING:-/usr/share/keyrings/debian-archive-keyring.gpg}
[ -f "$keyring" ] || { echo "fetch_httplib_source.sh: $keyring is missing (apt-get install debian-archive-keyring)" >&2; exit 1; }
work="$dest/apt"
rm -rf "$work" "$include"
mkdir -p "$work/lists/partial" "$work/none" "$work/archives/partial" "$work/src"
# The suites of this machine's release (bookworm's security fix 0.11.4+ds-1+deb12u1 is in
# bookworm proper and bookworm-security).
codename=$(. /etc/os-release 2>/dev/null && echo "${VERSION_CODENAME:-}")
codename=${codename:-bookworm}
cat > "$work/src.sources" <<SOURCES
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: $codename $codename-updates
Components: main
Signed-By: $keyring

Types: deb-src
URIs: http://deb.debian.org/debian-security
Suites: $codename-security
Components: main
Signed-By: $keyring
SOURCES
apt_options=(-o "Dir::Etc::SourceParts=$work/none" -o "Dir::Etc::sourcelist=$work/src.sources"
             -o "Dir::State::Lists=$work/lists" -o "Dir::Cache::archives=$work/archives" -o Debug::NoLocking=1)
# Each failure says what did not work; nothing is left in DEST/include but a whole header
# with its version stamp (the build then finds the header, or goes without the gui).
fail() {
  echo "fetch_httplib_source.sh: $1" >&2
  rm -rf "$work" "$include"
  exit 1
}
apt-get -q "${apt_options[@]}" update >&2 ||
  fail "cannot read Debian's source index (apt-get update failed: no network, or no mirror of deb.debian.org)"
(cd "$work/src" && apt-get -q "${apt_options[@]}" source --download-only "cpp-httplib=$version" >&2) ||
  fail "cannot download the source package cpp-httplib=$version (the version installed here)"
dsc=$(ls "$work"/src/*.dsc 2>/dev/null | head -n 1 || true)
[ -n "$dsc" ] || fail "apt-get downloaded no .dsc for cpp-httplib=$version"
(cd "$work/src" && dpkg-source -x "$(basename "$dsc")" unpacked >&2) || fail "dpkg-source could not unpack $(basename "$dsc")"
[ -f "$work/src/unpacked/httplib.h" ] || fail "cpp-httplib $version's source has no httplib.h"
mkdir -p "$include"
cp "$work/src/unpacked/httplib.h" "$include/httplib.h.partial" && mv "$include/httplib.h.partial" "$include/httplib.h" ||
  fail "cannot write $include/httplib.h"
echo "$version" > "$stamp"
rm -rf "$work"
echo "$include"
