#!/bin/sh
# memory_bench.sh: what the memory samples (RHEAPER_RSS_MS) cost
# (docs/memory.md "Benchmark").
#
#   sh bench/memory_bench.sh [--build DIR] [--out DIR] [--runs N]
#                                  [--lua-n N] [--bytes N] [--callgrind [N]]
#
# Lua 5.4 (Debian source, tests/e2e/programs/fetch_source.sh) running alloc.lua
# (default 300000), built with the flags rheaper-cc adds ("plain", the
# baseline) and with rheaper-cc. Variants, run interleaved for RUNS rounds
# (default 7): plain; full-nomem (RHEAPER_ENABLE=1 RHEAPER_RSS_MS=0) and
# full (the default, a sample every 10 ms); full-1ms (RHEAPER_RSS_MS=1, ten
# times the samples, so that their own cost shows above the noise); the same
# three under RHEAPER_SAMPLE_BYTES=N (default 524288): bytes-nomem, bytes,
# bytes-1ms. Prints the median CPU (user + sys) and wall time of each, the
# ratio of each to plain and of each sampled-memory variant to its nomem
# twin, the memory samples per run (from the profile) and the load average.
#
# Then the cost of one sample's parts, measured in a program of its own
# (memsample_cost.c): open/read/close of /proc/self/statm by raw system
# calls, and mallinfo2 on a heap without free chunks and on one with
# 100 000 of them in the bins.
#
# --callgrind [N]: instead of timing, the instructions (Ir) of one run of
# full-nomem, full-hour (RHEAPER_RSS_MS=3600000: the deadline's compare on
# every event, no sample but the first and the last) and full with
# alloc.lua N (default 100000) under valgrind --tool=callgrind: per recorded
# event, and per sample, exact and immune to load (a sample's system calls
# are not counted; their time is the statm line of the timing mode).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= runs=7 luan=300000 bytes=524288 cg=0 cgn=100000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --lua-n) luan=$2; shift 2 ;;
    --bytes) bytes=$2; shift 2 ;;
    --callgrind) cg=1; shift
        case ${1-} in [0-9]*) cgn=$1; shift ;; esac ;;
    *) echo "usage: memory_bench.sh [--build DIR] [--out DIR] [--runs N] [--lua-n N] [--bytes N] [--callgrind [N]]" >&2
       exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
bin=$build/bin
[ -n "$out" ] || out=$build/bench-memory
mkdir -p "$out" && out=$(cd "$out" && pwd)
cc=${CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"

sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/src" >/dev/null 2>&1 ||
    { echo "FAIL: the Lua source could not be fetched"; exit 1; }
for v in plain rh; do
    case $v in
    plain) c="$cc -std=gnu99 $flags" ;;
    rh) c="$bin/rheaper-cc -std=gnu99" ;;
    esac
    if [ ! -x "$out/lua-$v/src/lua" ] || [ "$build/lib/librheaper_rt.a" -nt "$out/lua-$v/src/lua" ]; then
        rm -rf "$out/lua-$v" && cp -r "$out/src/src" "$out/lua-$v"
        make -s -j2 -C "$out/lua-$v" linux CC="$c" >"$out/lua-$v.log" 2>&1 ||
            { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
    fi
done
lua=$out/lua-rh/src/lua
mkdir -p "$out/prof"
# vars VARIANT: the environment of a variant
vars() {
    case $1 in
    full-nomem) echo "RHEAPER_ENABLE=1 RHEAPER_RSS_MS=0" ;;
    full-hour) echo "RHEAPER_ENABLE=1 RHEAPER_RSS_MS=3600000" ;;
    full) echo "RHEAPER_ENABLE=1" ;;
    full-1ms) echo "RHEAPER_ENABLE=1 RHEAPER_RSS_MS=1" ;;
    bytes-nomem) echo "RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=$bytes RHEAPER_RSS_MS=0" ;;
    bytes) echo "RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=$bytes" ;;
    bytes-1ms) echo "RHEAPER_ENABLE=1 RHEAPER_SAMPLE_BYTES=$bytes RHEAPER_RSS_MS=1" ;;
    esac
}

if [ "$cg" = 1 ]; then
    command -v valgrind >/dev/null || { echo "FAIL: --callgrind needs valgrind"; exit 1; }
    cgir() {
        f=$out/cg-$1-$2.out
        rm -f "$out/prof"/rip-* "$f"
        env $(vars "$1") RHEAPER_PROFILE_DIR="$out/prof" valgrind --tool=callgrind \
            --callgrind-out-file="$f" "$lua" "$here/alloc.lua" "$2" >/dev/null 2>"$out/cg.err" ||
            { echo "FAIL: callgrind ($1); see $out/cg.err" >&2; exit 1; }
        awk '/^summary:/ {print $2}' "$f"
    }
    a=$(cgir full-nomem "$cgn") h=$(cgir full-hour "$cgn")
    ev=$("$bin/rheaper-convert" "$out/prof"/rip-* "$out/cg.db" --force >/dev/null 2>&1;
         sqlite3 "$out/cg.db" "select value from meta where key = 'events'")
    nh=$(sqlite3 "$out/cg.db" "select count(*) from memory")
    b=$(cgir full "$cgn")
    "$bin/rheaper-convert" "$out/prof"/rip-* "$out/cg.db" --force >/dev/null 2>&1
    ns=$(sqlite3 "$out/cg.db" "select count(*) from memory")
    echo "callgrind: alloc.lua $cgn, one run each; $ev events recorded"
    echo
    echo "| variant | memory samples | Ir | Ir over full-nomem | per recorded event |"
    echo "|---|--:|--:|--:|--:|"
    for v in "full-nomem 0 $a" "full-hour $nh $h" "full $ns $b"; do
        set -- $v
        awk -v n="$1" -v s="$2" -v ir="$3" -v a="$a" -v e="$ev" \
            'BEGIN { printf "| %s | %d | %.0f | %.0f | %.2f |\n", n, s, ir, ir - a, (ir - a) / e }'
    done
    echo
    echo "full-hour: RHEAPER_RSS_MS=3600000, the deadline's compare on every event and the first and"
    echo "last samples only; full: every 10 ms of the run under valgrind (slowed about 50x, so far"
    echo "more samples than a native run takes); (full - full-hour) / its samples is one sample's"
    awk -v b="$b" -v h="$h" -v s="$ns" -v k="$nh" 'BEGIN { printf "instructions in user space: %.0f Ir (its system calls are not counted)\n", (b - h) / (s - k) }'
    exit 0
fi

# one VARIANT: prints "cpu wall samples" of one run
one() {
    case $1 in
    plain) set -- "$out/lua-plain/src/lua" ;;
    *) set -- env $(vars "$1") RHEAPER_PROFILE_DIR="$out/prof" "$lua" ;;
    esac
    rm -f "$out/prof"/rip-*
    s=$(date +%s%N)
    /usr/bin/env time -f '%U %S' -o "$out/time.txt" "$@" "$here/alloc.lua" "$luan" >/dev/null 2>&1
    e=$(date +%s%N)
    # memory samples in the profile: EXT 30 records, counted by the converter
    n=0
    if ls "$out/prof"/rip-* >/dev/null 2>&1; then
        "$bin/rheaper-convert" "$out/prof"/rip-* "$out/one.db" --force >/dev/null 2>&1 &&
            n=$(sqlite3 "$out/one.db" "select count(*) from memory")
    fi
    awk -v w=$(((e - s) / 1000)) -v n="$n" '{printf "%.3f %.3f %d\n", $1 + $2, w / 1e6, n}' "$out/time.txt"
}
variants="plain full-nomem full full-1ms bytes-nomem bytes bytes-1ms"
echo "load average before: $(rh_loadavg)"
: >"$out/runs.txt"
i=0
while [ $i -lt "$runs" ]; do
    for v in $variants; do echo "$v $(one $v)" >>"$out/runs.txt"; done
    i=$((i + 1))
done
echo "load average after: $(rh_loadavg)"
med() { rh_col "$out/runs.txt" "$1" "$2" | rh_median; }
r() { echo "$1 $2" | awk '{printf "%.3f", $1 / $2}'; }
pc=$(med plain 2) pw=$(med plain 3)
echo
echo "Lua 5.4 alloc.lua $luan, $runs interleaved rounds (medians)"
echo
echo "| variant | CPU (s) | CPU / plain | CPU / nomem twin | wall (s) | wall / plain | memory samples |"
echo "|---|--:|--:|--:|--:|--:|--:|"
for v in $variants; do
    c=$(med $v 2) w=$(med $v 3) n=$(med $v 4)
    case $v in
    full*) twin=$(med full-nomem 2) ;;
    bytes*) twin=$(med bytes-nomem 2) ;;
    *) twin=$c ;;
    esac
    echo "| $v | $c | $(r $c $pc) | $(r $c $twin) | $w | $(r $w $pw) | $n |"
done
echo
echo "full: RHEAPER_ENABLE=1 (memory samples every 10 ms, the default); nomem: RHEAPER_RSS_MS=0;"
echo "1ms: RHEAPER_RSS_MS=1; bytes: RHEAPER_SAMPLE_BYTES=$bytes"

# ---- the parts of one sample ------------------------------------------------
$cc -O2 -o "$out/memsample_cost" "$here/memsample_cost.c"
echo
"$out/memsample_cost"
