#!/bin/sh
# fetch_source.sh: fetch and unpack a Debian source package's upstream tarball
# with `apt-get source`, through a private source list (the system's apt
# configuration is not touched, and no root is needed).
#
#   fetch_source.sh PACKAGE DEST_DIR
#
# Unpacks the .orig tarball into DEST_DIR/src (once; later calls reuse it).
# Exits 77 with a "SKIP:" line when the source cannot be fetched, so a test
# that needs it is skipped rather than failed on a machine without the archive.
set -eu
pkg=$1 dest=$2
[ -d "$dest/src" ] && exit 0
mkdir -p "$dest/apt/lists/partial"
printf 'deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main\n' \
    > "$dest/apt/src.list"
cd "$dest"
set -- -o Dir::Etc::SourceList="$dest/apt/src.list" -o Dir::Etc::SourceParts=/dev/null \
    -o Dir::State::Lists="$dest/apt/lists" -o Debug::NoLocking=1
if ! { apt-get "$@" update -qq && apt-get "$@" source --download-only "$pkg"; } > fetch.log 2>&1; then
    echo "SKIP: cannot fetch the $pkg source with apt-get source (see $dest/fetch.log)"
    exit 77
fi
mkdir src.tmp
# the upstream tarball: .orig.tar.gz (lua, redis) or .orig.tar.xz (sqlite3);
# tar picks the decompressor
tar xf "$(ls "${pkg}"_*.orig.tar.* | head -n 1)" -C src.tmp --strip-components=1
mv src.tmp src
