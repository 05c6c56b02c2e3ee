#!/bin/sh
# build_pg.sh: Debian's PostgreSQL 15 built with rheaper-cc, once per build
# tree, for the PostgreSQL test (postgres.sh) and its benchmark
# (bench/postgres.sh).
#
#   build_pg.sh BIN_DIR SRC_DIR CACHE_DIR [plain]
#
# Fetches the source (tests/e2e/programs/fetch_source.sh: apt-get source
# postgresql-15, private source list), applies postgres-leak.patch (the planted
# chunks in postgres.c's exec_simple_query; the allocator's files aset.c,
# mcxt.c, generation.c and slab.c are not touched) and builds a minimal server:
# no readline, ICU, zlib, SSL or NLS, the system's time zones; only the server,
# its text-search dictionaries and PL/pgSQL (initdb needs both), initdb,
# pg_ctl, psql and pgbench, installed into CACHE_DIR/inst. The server is
# linked with RHEAPER_ALLOCATORS=share/rheaper/allocators/postgresql.alloc, the
# shipped file; the frontend programs, whose palloc is libpgcommon's malloc
# wrapper, without it.
#
# The build is kept: a later call only relinks the programs when rheaper-cc,
# its runtime, the allocator file or the patch changed (CACHE_DIR/stamp), and
# does nothing when none did. Prints the install directory on the last line.
# With `plain` (the benchmark's baseline): the same build with the system's cc
# and no rheaper, into CACHE_DIR/inst-plain.
# Exits 77 ("SKIP:") when the source cannot be fetched.
set -eu
bin=$1 src=$2 cache=$3 mode=${4:-rheaper}
root=$(cd "$src/../../.." && pwd)
alloc="$root/share/rheaper/allocators/postgresql.alloc"
patchf="$src/postgres-leak.patch"
mkdir -p "$cache"
rc=0
sh "$root/tests/e2e/programs/fetch_source.sh" postgresql-15 "$cache/src" >&2 || rc=$?
[ $rc = 0 ] || exit $rc
# what the programs' link depends on: the wrapper, its runtime archives, the
# allocator file and the patch
if [ "$mode" = plain ]; then
    cc=cc
    stamp=$(cksum < "$patchf")
    tree="$cache/tree-plain" inst="$cache/inst-plain"
else
    cc="$bin/rheaper-cc"
    stamp=$(cat "$bin/rheaper-cc" "$bin/../lib/librheaper_rt.a" "$bin/../lib/librheaper_ip.a" \
        "$bin/../lib/librheaper_ipcxx.a" "$bin/../lib/librheaper_weak.a" "$alloc" "$patchf" | cksum)
    tree="$cache/tree" inst="$cache/inst"
fi
if [ -f "$tree.stamp" ] && [ "$(cat "$tree.stamp")" = "$stamp" ] && [ -x "$inst/bin/postgres" ]; then
    echo "$inst"
    exit 0
fi
rm -f "$tree.stamp"
log="$tree.log"
t0=$(date +%s)
if [ ! -f "$tree/config.status" ] || ! cmp -s "$patchf" "$tree.patch"; then
    rm -rf "$tree" "$inst"
    # timestamps kept: the tarball's generated parsers stay newer than their
    # grammars (no bison needed)
    cp -a "$cache/src/src" "$tree"
    (cd "$tree" && patch -p1 -s < "$patchf") || { echo "FAIL: the leak patch does not apply" >&2; exit 1; }
    cp "$patchf" "$tree.patch"
    (cd "$tree" && CC="$cc" ./configure --prefix="$inst" --without-readline \
        --without-icu --without-zlib --without-openssl --without-lz4 --without-zstd \
        --without-libxml --without-ldap --without-pam --without-gssapi --without-llvm \
        --disable-nls --with-system-tzdata=/usr/share/zoneinfo) > "$log" 2>&1 ||
        { tail -20 "$log" >&2; echo "FAIL: configure" >&2; exit 1; }
else
    # relink only: the objects do not depend on rheaper's runtime
    rm -f "$tree/src/backend/postgres" "$tree/src/bin/initdb/initdb" "$tree/src/bin/pg_ctl/pg_ctl" \
        "$tree/src/bin/psql/psql" "$tree/src/bin/pgbench/pgbench"
fi
# (set -e does not hold in a subshell whose status is tested: each step says
# its own failure)
(
    cd "$tree" || exit 1
    # the generated headers and the server's libraries first: a parallel
    # make of src/backend alone compiles before lwlocknames.h exists and
    # links before libpgcommon_srv.a is made
    make -C src/backend generated-headers || exit 1
    nice make -j2 -C src/port || exit 1
    nice make -j2 -C src/common || exit 1
    if [ "$mode" = plain ]; then nice make -j2 -C src/backend || exit 1
    else RHEAPER_ALLOCATORS="$alloc" nice make -j2 -C src/backend || exit 1; fi
    for d in src/backend/snowball src/pl/plpgsql src/timezone src/bin/initdb src/bin/pg_ctl \
        src/bin/psql src/bin/pgbench; do
        nice make -j2 -C "$d" || exit 1
    done
    for d in src/backend src/backend/snowball src/pl/plpgsql src/timezone src/interfaces/libpq \
        src/bin/initdb src/bin/pg_ctl src/bin/psql src/bin/pgbench; do
        make -C "$d" install || exit 1
    done
) >> "$log" 2>&1 || { tail -30 "$log" >&2; echo "FAIL: building PostgreSQL with $cc (see $log)" >&2; exit 1; }
echo "ok: PostgreSQL built with $cc in $(($(date +%s) - t0)) s" >&2
echo "$stamp" > "$tree.stamp"
echo "$inst"
