#!/bin/sh
# breakdown.sh: where rheaper's cost per event goes (docs/benchmarks.md,
# "Cost per event").
#
#   sh bench/breakdown.sh [--build DIR] [--runs N] [--out DIR] [--no-wall]
#                               [--no-callgrind] [--no-heaptrack] [--cg-only WORKLOAD]
#
# Three workloads, each built plain (with the flags rheaper-cc adds, frame
# pointers included) and with rheaper-cc: the synthetic malloc/free loop
# (wl_synth.c, 1 thread), Lua 5.4 from its Debian source running alloc.lua,
# and deep stacks (wl_deep.c, depth 50).
#
# 1. Instructions (callgrind, load-independent, repeatable on a busy machine):
#    each workload at a small size, plain, tracking off, full recording and
#    sampled recording (RHEAPER_SAMPLE_BYTES=524288).
#    The tracked run's instructions are split into parts by source line
#    (cg_breakdown.awk: guard and state checks, clock read, stack walk, stack
#    hash + table lookup, record write, chunk handling, new stacks, other
#    runtime, program) and printed per event, with the walk's instructions per
#    frame (frames from the converted profile's stacks). `perf stat` is used
#    when the machine has the counters (a VM often has not: then it says so).
# 2. Time per clock read (clock_cost.c): callgrind counts rdtsc as one
#    instruction whatever it costs.
# 3. Wall time: RUNS (default 7) interleaved rounds of plain, tracking off,
#    full recording, heaptrack (on the plain build) and the floor (floor.c
#    linked into the plain build: its wrappers passing through, floor-pass;
#    a recorder cut down to a clock read and a stored event, floor-clock; and
#    that plus a frame-pointer walk, floor-walk), medians and ratios to
#    plain from the same run, with the load average before and after; and the
#    overhead in ns per event (median tracked - median plain, / events).
#
# Not run by the test command (docs/benchmarks.md). Lua is skipped with a note
# when its source cannot be fetched (tests/e2e/programs/fetch_source.sh), heaptrack
# when not installed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build runs=7 out= wall=1 ht=1 only= cgon=1
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --no-wall) wall=0; shift ;;
    --no-callgrind) cgon=0; shift ;;
    --no-heaptrack) ht=0; shift ;;
    --cg-only) only=$2; shift 2 ;;
    *) echo "usage: breakdown.sh [--build DIR] [--runs N] [--out DIR] [--no-wall] [--no-callgrind] [--no-heaptrack] [--cg-only WL]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/breakdown
mkdir -p "$out" && out=$(cd "$out" && pwd)
bin=$build/bin
for t in rheaper-cc rheaper-convert; do
    [ -x "$bin/$t" ] || { echo "FAIL: $bin/$t not built" >&2; exit 1; }
done
command -v valgrind > /dev/null || { echo "FAIL: valgrind not installed" >&2; exit 1; }
cc=${RHEAPER_CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
case $(uname -m) in x86_64|i?86|aarch64) ;; *) flags=$(echo "$flags" | sed 's/ -mno-omit-leaf-frame-pointer//') ;; esac

# ---- builds
"$cc" -O2 -I"$root/runtime" -o "$out/rh_bench" "$here/rh_bench.c"
"$cc" -O2 -o "$out/clock_cost" "$here/clock_cost.c"
# the floor's wrappers (floor.c), linked into plain builds
"$cc" -O2 -fno-omit-frame-pointer -c -o "$out/floor.o" "$here/floor.c"
fwrap="-Wl,--wrap=malloc -Wl,--wrap=free -Wl,--wrap=realloc -Wl,--wrap=calloc"
for w in wl_synth wl_deep; do
    "$cc" $flags -pthread -o "$out/$w.plain" "$here/$w.c"
    "$cc" $flags -pthread -o "$out/$w.floor" "$here/$w.c" $fwrap "$out/floor.o"
    "$bin/rheaper-cc" -O2 -pthread -o "$out/$w.rh" "$here/$w.c"
done
lua=0
rc=0
sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
if [ "$rc" -eq 0 ] && [ -d "$out/lua/src" ]; then
    for v in plain floor rh; do
        set --
        case $v in
        plain) c="$cc -std=gnu99 $flags" ;;
        floor) c="$cc -std=gnu99 $flags"; set -- MYLDFLAGS="$fwrap" MYLIBS="$out/floor.o" ;;
        rh) c="$bin/rheaper-cc -std=gnu99" ;;
        esac
        if [ ! -x "$out/lua-$v/src/lua" ] || [ "$bin/rheaper-cc" -nt "$out/lua-$v/src/lua" ] ||
            [ "$build/lib/librheaper_rt.a" -nt "$out/lua-$v/src/lua" ] ||
            [ "$here/floor.c" -nt "$out/lua-$v/src/lua" ]; then
            rm -rf "$out/lua-$v" && cp -r "$out/lua/src" "$out/lua-$v"
            make -s -j2 -C "$out/lua-$v" linux CC="$c" "$@" > "$out/lua-$v.log" 2>&1 ||
                { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
        fi
    done
    lua=1
else
    echo "breakdown: note: Lua skipped (its source could not be fetched)"
fi

# workload table: ID PLAIN RH ARGS(callgrind size) ARGS(wall size) FLOOR
wls="synth|$out/wl_synth.plain|$out/wl_synth.rh|1 200000|1 3000000|$out/wl_synth.floor"
[ "$lua" = 1 ] && wls="$wls
lua|$out/lua-plain/src/lua|$out/lua-rh/src/lua|$here/alloc.lua 20000|$here/alloc.lua 300000|$out/lua-floor/src/lua"
wls="$wls
deep|$out/wl_deep.plain|$out/wl_deep.rh|50 100000|50 1000000|$out/wl_deep.floor"
[ -n "$only" ] && wls=$(echo "$wls" | grep "^$only|")

# ---- the functions of the runtime and the shims, by source line
for f in "$root"/runtime/*.c "$root"/runtime/*.h "$root"/wrap/*.c "$root"/wrap/*.h; do
    awk -v b="$(basename "$f")" '
        !infn && !pend && /^[A-Za-z_]/ && /\(/ && !/^#/ && !/^typedef/ {
            s = $0; gsub(/__attribute__\(\([^)]*\)\)/, "", s); sub(/\(.*/, "", s)
            n = split(s, w, /[^A-Za-z0-9_]+/)
            name = w[n]; if (name == "" && n > 1) name = w[n - 1]
            pend = 1; start = FNR
        }
        pend && !infn { if ($0 ~ /\{/) infn = 1; else if ($0 ~ /;[ \t]*$/) pend = 0 }
        infn && /^}/ { print b, start, FNR, name; infn = 0; pend = 0 }' "$f"
done > "$out/ranges.txt"

perf_ok=0
if command -v perf > /dev/null && perf stat -x, -e instructions true 2>&1 | grep -q '^[0-9]'; then
    perf_ok=1
else
    echo "breakdown: note: perf stat has no instruction counter here (a VM); callgrind only"
fi

# cg ID VARIANT BIN ARGS: runs one variant under callgrind; prints its instructions
cg() {
    d=$out/cg/$1-$2
    rm -rf "$d" && mkdir -p "$d"
    en=0 sb=
    [ "$2" = on ] && en=1
    [ "$2" = sampled ] && en=1 sb=524288
    RHEAPER_ENABLE=$en RHEAPER_SAMPLE_BYTES=$sb RHEAPER_PROFILE_DIR="$d" valgrind --tool=callgrind \
        --callgrind-out-file="$d/cg.out" "$3" $4 > /dev/null 2> "$d/vg.log" ||
        { echo "FAIL: callgrind run $d (see $d/vg.log)"; exit 1; }
    awk '/^totals:|^summary:/ {print $2; exit}' "$d/cg.out"
}

[ "$cgon" = 1 ] && echo "## Instructions per event (callgrind)" && echo &&
    echo "load average: $(rh_loadavg); $(nproc) cores, $(uname -m)" && echo
[ "$cgon" = 1 ] && echo "$wls" | while IFS='|' read -r id pbin rbin cgargs wargs fbin; do
    ip=$(cg "$id" plain "$pbin" "$cgargs")
    io=$(cg "$id" off "$rbin" "$cgargs")
    ion=$(cg "$id" on "$rbin" "$cgargs")
    isa=$(cg "$id" sampled "$rbin" "$cgargs")
    d=$out/cg/$id-on
    rip=$(ls "$d"/rip-* | head -n 1)
    ev=$("$out/rh_bench" --events "$rip")
    [ "$ev" -gt 0 ] || { echo "FAIL: no events in $rip"; exit 1; }
    "$bin/rheaper-convert" --quiet "$rip" "$d/p.db"
    # frames walked: the depth of every allocation's and realloc's stack
    frames=$(sqlite3 "$d/p.db" "SELECT count(*) || ' ' || coalesce(sum(s.depth), 0) FROM allocations a JOIN stacks s ON s.id = a.bt")
    awk -f "$here/cg_breakdown.awk" "$out/ranges.txt" "$d/cg.out" > "$d/parts.txt"
    awk -v id="$id" -v ev="$ev" -v ip="$ip" -v io="$io" -v ion="$ion" -v isa="$isa" -v fr="$frames" '
        { v[$1] = $2 }
        END {
            split(fr, f, " "); walks = f[1]; frames = f[2]
            printf "### %s: %d events, %d stacks walked, %.1f frames per walk\n\n", id, ev, walks, walks ? frames / walks : 0
            printf "| instructions | plain | tracking off | full recording | sampled (512 KiB) |\n|---|--:|--:|--:|--:|\n"
            printf "| total (M) | %.1f | %.1f | %.1f | %.1f |\n", ip / 1e6, io / 1e6, ion / 1e6, isa / 1e6
            printf "| ratio to plain | 1.00 | %.3f | %.3f | %.3f |\n", io / ip, ion / ip, isa / ip
            printf "| rheaper per event of full recording | | %.1f | %.1f | %.1f |\n\n", (io - ip) / ev, (ion - ip) / ev, (isa - ip) / ev
            printf "| part (full recording) | per event | share of rheaper |\n|---|--:|--:|\n"
            rt = 0
            n = split("guard clock walk lookup record chunk stackdef other", ps, " ")
            for (i = 1; i <= n; i++) rt += v[ps[i]]
            names["guard"] = "guard, state checks, shim"; names["clock"] = "clock read (rdtsc)"
            names["walk"] = "stack walk"; names["lookup"] = "stack hash + table lookup"
            names["record"] = "record write"; names["chunk"] = "chunk handling"
            names["stackdef"] = "new stacks (STACK records)"; names["other"] = "other runtime"
            for (i = 1; i <= n; i++)
                printf "| %s | %.1f | %.0f %% |\n", names[ps[i]], v[ps[i]] / ev, rt ? 100 * v[ps[i]] / rt : 0
            printf "| **rheaper, all parts** | **%.1f** | 100 %% |\n", rt / ev
            printf "| program, allocator, libc (plain run: %.1f) | %.1f | |\n", ip / ev, v["program"] / ev
            if (frames) printf "\nstack walk per frame: %.2f instructions (%.0f frames)\n", v["walk"] / frames, frames
            printf "\n"
        }' "$d/parts.txt"
    if [ "$perf_ok" = 1 ]; then
        for v in plain on; do
            b=$pbin; [ "$v" = on ] && b=$rbin
            printf 'perf stat %s %s: ' "$id" "$v"
            env RHEAPER_ENABLE=$([ "$v" = on ] && echo 1 || echo 0) RHEAPER_PROFILE_DIR="$d" \
                perf stat -x, -e instructions,branches "$b" $cgargs 2>&1 > /dev/null | cut -d, -f1,3 | tr '\n' ' '
            echo
        done
    fi
done

echo "## Time per clock read"
echo
"$out/clock_cost" | awk '{printf "- %s: %s ns per read (median of 7 rounds, back to back)\n", $1, $2}'
echo
[ "$wall" = 1 ] || exit 0

# ---- wall time, interleaved
htbin=$(command -v heaptrack || true)
[ "$ht" = 1 ] && [ -n "$htbin" ] || htbin=
[ -n "$htbin" ] || echo "breakdown: note: heaptrack skipped"
mkdir -p "$out/wall"
# one ID VARIANT PLAIN RH ARGS FLOOR: prints the wall microseconds of one run
one() {
    d=$out/wall/$1-$2
    rm -rf "$d" && mkdir -p "$d"
    case $2 in
    plain) set -- "$3" $5 ;;
    off) set -- "$4" $5 ;;
    on) set -- env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d" "$4" $5 ;;
    heaptrack) set -- "$htbin" -o "$d/ht" "$3" $5 ;;
    floor-pass) set -- env FLOOR_MODE=0 "$6" $5 ;;
    floor-clock) set -- env FLOOR_MODE=1 "$6" $5 ;;
    floor-walk) set -- env FLOOR_MODE=2 "$6" $5 ;;
    esac
    s=$(date +%s%N)
    "$@" > /dev/null 2>&1 || { echo "FAIL: wall run $d" >&2; exit 1; }
    e=$(date +%s%N)
    echo $(((e - s) / 1000))
}
variants="plain off on"
[ -n "$htbin" ] && variants="$variants heaptrack"
variants="$variants floor-pass floor-clock floor-walk"
echo "## Wall time, $runs interleaved rounds"
echo
echo "load average before: $(rh_loadavg)"
: > "$out/wall/runs.txt"
i=0
while [ "$i" -lt "$runs" ]; do
    echo "$wls" | while IFS='|' read -r id pbin rbin cgargs wargs fbin; do
        for v in $variants; do
            echo "$id $v $(one "$id" "$v" "$pbin" "$rbin" "$wargs" "$fbin")" >> "$out/wall/runs.txt"
        done
    done
    i=$((i + 1))
done
echo "load average after: $(rh_loadavg)"
echo
med() { grep "^$1 $2 " "$out/wall/runs.txt" | awk '{print $3}' | rh_median; }
echo "| workload | variant | wall median (s) | min (s) | max (s) | wall / plain |"
echo "|---|---|--:|--:|--:|--:|"
echo "$wls" | while IFS='|' read -r id pbin rbin cgargs wargs fbin; do
    p=$(med "$id" plain)
    for v in $variants; do
        m=$(med "$id" "$v")
        grep "^$id $v " "$out/wall/runs.txt" | awk -v id="$id" -v v="$v" -v m="$m" -v p="$p" '
            NR == 1 {lo = $3; hi = $3} {if ($3 < lo) lo = $3; if ($3 > hi) hi = $3}
            END {printf "| %s | %s | %.3f | %.3f | %.3f | %.2f |\n", id, v, m / 1e6, lo / 1e6, hi / 1e6, m / p}'
    done
done
echo
echo "Overhead of full recording per event (wall median tracked - plain, / events of the last tracked run):"
echo "$wls" | while IFS='|' read -r id pbin rbin cgargs wargs fbin; do
    ev=$("$out/rh_bench" --events "$(ls "$out/wall/$id-on"/rip-* | head -n 1)")
    awk -v id="$id" -v p="$(med "$id" plain)" -v o="$(med "$id" on)" -v ev="$ev" \
        'BEGIN {printf "- %s: %.1f ns per event (%d events)\n", id, ev ? (o - p) * 1000 / ev : 0, ev}'
done
