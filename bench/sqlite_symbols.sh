#!/bin/sh
# sqlite_symbols.sh: what `rheaper top` says about SQLite's allocations with
# Debian's stripped libsqlite3, and with the same library built from Debian's
# source with its symbols ("rheaper top names SQLite's allocating
# functions").
#
#   sh bench/sqlite_symbols.sh [--build DIR] [--out DIR] [--rows N]
#
# Debian's libsqlite3.so.0 keeps only .dynsym: SQLite's exported functions
# (sqlite3_step, and many internal ones Debian exports: sqlite3VdbeExec,
# sqlite3BtreeInsert), but not its static ones (sqlite3MemMalloc,
# dbMallocRawFinish). Its -dbgsym package would add them; when the debug
# archive cannot be reached, this script builds the library itself: it fetches
# Debian's sqlite3 source package (tests/e2e/programs/fetch_source.sh, a private
# deb-src list), applies Debian's patches, generates the amalgamation
# (configure; make sqlite3.c: needs tclsh) and compiles libsqlite3.so.0 with
# debian/rules' -D options plus -g, unstripped. It then runs one program,
# workload 5 (wl_sqlite.c, built once with rheaper-cc against the system's
# library), twice: as is, and with LD_LIBRARY_PATH pointing at the unstripped
# build. OUT/sqlite_symbols.md gets both `rheaper top` tables and notices.
# Not part of the test suite (network, minutes of compiling). Exit 77 when
# the source or tclsh is missing.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build="$root/build" out="" rows=20000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --rows) rows=$2; shift 2 ;;
    *) echo "usage: sqlite_symbols.sh [--build DIR] [--out DIR] [--rows N]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out="$build/bench/sqlite-symbols"
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin="$build/bin"
[ -x "$bin/rheaper-cc" ] || { echo "sqlite_symbols.sh: build rheaper first" >&2; exit 1; }
command -v tclsh > /dev/null 2>&1 ||
    { echo "SKIP: tclsh is needed to generate SQLite's amalgamation (apt-get install tcl)"; exit 77; }

sh "$root/tests/e2e/programs/fetch_source.sh" sqlite3 "$out/source" || exit $?

# ---- the unstripped library ------------------------------------------------
lib="$out/lib/libsqlite3.so.0"
if [ ! -f "$lib" ]; then
    rm -rf "$out/tree" && cp -r "$out/source/src" "$out/tree"
    tar xJf "$out"/source/sqlite3_*.debian.tar.xz -C "$out/tree"
    for p in $(grep -v '^#' "$out/tree/debian/patches/series"); do
        patch -d "$out/tree" -p1 -s < "$out/tree/debian/patches/$p" ||
            { echo "sqlite_symbols.sh: Debian's patch $p does not apply" >&2; exit 1; }
    done
    mkdir -p "$out/tree/bld" "$out/lib"
    echo "generating the amalgamation (configure; make sqlite3.c) ..." >&2
    (cd "$out/tree/bld" && ../configure --disable-tcl > configure.log 2>&1 &&
        make sqlite3.c > make.log 2>&1) ||
        { echo "sqlite_symbols.sh: see $out/tree/bld/make.log" >&2; exit 1; }
    # debian/rules' `export CFLAGS += ...` block: its -D options
    defs=$(awk '/^export CFLAGS \+=/ { on = 1 } on { print } on && !/\\$/ { exit }' \
        "$out/tree/debian/rules" | grep -o -- '-D[A-Za-z_0-9=]*' | tr '\n' ' ')
    echo "compiling libsqlite3.so.0 with -O2 -g and Debian's options ..." >&2
    # shellcheck disable=SC2086 # the options are split into words on purpose
    cc -O2 -g -fno-strict-aliasing -fPIC -shared -Wl,-soname,libsqlite3.so.0 $defs \
        "$out/tree/bld/sqlite3.c" -o "$lib" -lm -ldl -lpthread
fi

# ---- one program, both libraries -------------------------------------------
"$bin/rheaper-cc" -O2 -o "$out/wl_sqlite" "$here/wl_sqlite.c" -lsqlite3
# profile NAME [LD_LIBRARY_PATH]: OUT/NAME/p.db
profile() {
    rm -rf "${out:?}/$1" && mkdir -p "$out/$1"
    (cd "$out/$1" && LD_LIBRARY_PATH=${2:-} RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/$1" \
        "$out/wl_sqlite" "$rows" > /dev/null 2>&1)
    "$bin/rheaper-convert" --quiet "$out/$1"/rip-* "$out/$1/p.db" > /dev/null
}
profile debian
profile unstripped "$out/lib"
{
    echo "# rheaper top on workload 5 (wl_sqlite $rows), one binary, two libsqlite3 builds"
    echo
    for v in debian unstripped; do
        case $v in
        debian) echo "Debian's libsqlite3.so.0 (stripped; $(sqlite3 "$out/$v/p.db" \
            "SELECT value FROM meta WHERE key LIKE 'debug:%libsqlite3%'")):" ;;
        *) echo "The same source built with -g, unstripped ($(sqlite3 "$out/$v/p.db" \
            "SELECT value FROM meta WHERE key LIKE 'debug:%libsqlite3%'" | sed "s|$out/||")):" ;;
        esac
        echo
        echo '```'
        "$bin/rheaper" top -n 10 "$out/$v/p.db" 2>&1 | cut -c1-150
        echo '```'
        echo
        echo "$(sqlite3 "$out/$v/p.db" "SELECT count(*) FROM allocations") rows;" \
            "the skipped functions with most stacks:" \
            "$(sqlite3 "$out/$v/p.db" "SELECT group_concat(sym || ' (' || stacks || ')', ', ') FROM
                (SELECT * FROM skipped_functions ORDER BY stacks DESC LIMIT 8)")."
        echo
    done
} > "$out/sqlite_symbols.md"
cat "$out/sqlite_symbols.md"
