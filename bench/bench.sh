#!/bin/sh
# bench.sh: rheaper's benchmark (docs/benchmarks.md).
#
#   sh bench/bench.sh [--build DIR] [--runs N] [--out DIR] [--tiny] [--no-massif]
#
# Builds the workloads twice, with the plain compiler and with rheaper-cc (the
# plain build gets the same compile flags rheaper-cc adds, frame pointers
# included), then lets the C driver rh_bench run every variant interleaved:
# plain, rheaper-cc with tracking off, rheaper-cc with RHEAPER_ENABLE=1,
# heaptrack and valgrind massif (both on the plain build). Writes the Markdown
# report to OUT/results.md (default BUILD/bench) and prints it.
#
# Workloads: 1 synthetic malloc/free loop at 1 and 2 threads (wl_synth.c);
# 2 Lua 5.4 from unmodified Debian source (fetched with tests/e2e/programs/fetch_source.sh)
# running alloc.lua; 3 deep stacks (wl_deep.c, depth 50); 4 many distinct call
# paths (wl_paths.c, 2^17); 5 allocations inside the system's libsqlite3
# (wl_sqlite.c), with the depth of the stacks found there. --tiny uses small
# sizes and one run (the ctest bench-tiny) and then checks that every variant
# ran; it asserts no timings.
# Lua, heaptrack and massif are skipped with a message when unavailable.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/.." && pwd)
build=$root/build runs=5 out= tiny=0 massif=1
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --tiny) tiny=1; shift ;;
    --no-massif) massif=0; shift ;;
    *) echo "usage: bench.sh [--build DIR] [--runs N] [--out DIR] [--tiny] [--no-massif]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/bin
for t in rheaper-cc rheaper-convert; do
    [ -x "$bin/$t" ] || { echo "FAIL: $bin/$t not built; run cmake --build $build first" >&2; exit 1; }
done
cc=${RHEAPER_CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
case $(uname -m) in x86_64|i?86|aarch64) ;; *) flags=$(echo "$flags" | sed 's/ -mno-omit-leaf-frame-pointer//') ;; esac

if [ "$tiny" = 1 ]; then
    runs=1 pairs=200000 deep=10000 levels=12 prounds=1 luan=3000 mlimit=30 sqln=2000
else
    pairs=3000000 deep=1000000 levels=17 prounds=3 luan=300000 mlimit=120 sqln=200000
fi

# The driver, and the C workloads in both builds.
"$cc" -O2 -I"$root/runtime" -o "$out/rh_bench" "$here/rh_bench.c"
for w in wl_synth wl_deep wl_paths; do
    "$cc" $flags -pthread -o "$out/$w.plain" "$here/$w.c"
    "$bin/rheaper-cc" -O2 -pthread -o "$out/$w.rh" "$here/$w.c"
done

# Workload 5: allocations inside a system library (libsqlite3), and the depth
# of the stacks the walk finds there (a tracked run converted once).
sqlite=0
if "$cc" $flags -o "$out/wl_sqlite.plain" "$here/wl_sqlite.c" -lsqlite3 2> "$out/wl_sqlite.log" &&
    "$bin/rheaper-cc" -O2 -o "$out/wl_sqlite.rh" "$here/wl_sqlite.c" -lsqlite3 2>> "$out/wl_sqlite.log"; then
    sqlite=1
    rm -rf "$out/sqlite-depth" && mkdir -p "$out/sqlite-depth"
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/sqlite-depth" "$out/wl_sqlite.rh" "$sqln" > /dev/null 2>&1 &&
        "$bin/rheaper-convert" --quiet "$out"/sqlite-depth/rip-* "$out/sqlite-depth/p.db" &&
        sqlite3 "$out/sqlite-depth/p.db" "
            SELECT 'bench: workload 5 stacks: ' || count(*) || ' allocations, mean depth ' ||
                   printf('%.1f', avg(s.depth)) || ', max ' || max(s.depth) || ', truncated ' ||
                   sum(s.truncated) || ', with a libsqlite3 frame ' ||
                   sum(a.bt IN (SELECT id FROM backtraces WHERE module LIKE '%libsqlite3%'))
            FROM allocations a JOIN stacks s ON s.id = a.bt" > "$out/sqlite-depth.txt" ||
        echo "FAIL: workload 5's depth run"
    cat "$out/sqlite-depth.txt" 2>/dev/null || true
else
    echo "bench: note: workload 5 skipped (libsqlite3-dev missing; see $out/wl_sqlite.log)"
fi

set -- \
    --workload "synth-1t|Workload 1: synthetic malloc/free loop, 1 thread, $pairs pairs|$pairs|1|$out/wl_synth.plain|$out/wl_synth.rh|1 $pairs" \
    --workload "synth-2t|Workload 1: synthetic malloc/free loop, 2 threads, $pairs pairs each|$pairs|2|$out/wl_synth.plain|$out/wl_synth.rh|2 $pairs"

# Lua 5.4 from its unmodified Debian source, built with each compiler.
rc=0
sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
if [ "$rc" -eq 0 ] && [ -d "$out/lua/src" ]; then
    for v in plain rh; do
        if [ "$v" = plain ]; then c="$cc -std=gnu99 $flags"; else c="$bin/rheaper-cc -std=gnu99"; fi
        if [ ! -x "$out/lua-$v/src/lua" ] || [ "$bin/rheaper-cc" -nt "$out/lua-$v/src/lua" ] ||
            [ "$build/lib/librheaper_rt.a" -nt "$out/lua-$v/src/lua" ]; then
            rm -rf "$out/lua-$v" && cp -r "$out/lua/src" "$out/lua-$v"
            make -s -j2 -C "$out/lua-$v" linux CC="$c" > "$out/lua-$v.log" 2>&1 ||
                { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
        fi
    done
    set -- "$@" --workload "lua|Workload 2: Lua 5.4 (Debian source) running alloc.lua $luan|0|1|$out/lua-plain/src/lua|$out/lua-rh/src/lua|$here/alloc.lua $luan"
else
    echo "bench: note: Lua skipped (its source could not be fetched)"
fi

set -- "$@" \
    --workload "deep|Workload 3: deep stacks, recursion depth 50, $deep pairs|0|1|$out/wl_deep.plain|$out/wl_deep.rh|50 $deep" \
    --workload "paths|Workload 4: $(( (1 << levels) )) distinct call paths, $prounds rounds|0|1|$out/wl_paths.plain|$out/wl_paths.rh|$levels $prounds"

[ "$sqlite" = 1 ] && set -- "$@" \
    --workload "sqlite|Workload 5: $sqln SQLite inserts, allocations inside the system's libsqlite3|0|1|$out/wl_sqlite.plain|$out/wl_sqlite.rh|$sqln"

ht=$(command -v heaptrack || true)
htp=$(command -v heaptrack_print || true)
vg=$(command -v valgrind || true)
[ -n "$ht" ] || echo "bench: note: heaptrack not found; its rows are skipped"
[ -n "$vg" ] && [ "$massif" = 1 ] || vg=
check=
[ "$tiny" = 1 ] && check=--check
machine="$(nproc) cores, $(uname -m), $(uname -r)"
exec "$out/rh_bench" --runs "$runs" --work "$out/runs" --out "$out/results.md" \
    --convert "$bin/rheaper-convert" --heaptrack "$ht" --heaptrack-print "$htp" --valgrind "$vg" \
    --massif-limit "$mlimit" --machine "$machine" $check "$@"
