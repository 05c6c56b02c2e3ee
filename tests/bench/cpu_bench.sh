#!/bin/sh
# cpu_bench.sh: the cost of CPU sampling (issue 16; README "CPU samples").
#
#   sh tests/bench/cpu_bench.sh [--build DIR] [--runs N] [--n LUAN] [--out DIR]
#
# Builds Lua 5.4 from its unmodified Debian source with rheaper-cc (fetched
# with tests/e2e/fetch_source.sh, as bench.sh does) and runs tests/bench/
# alloc.lua under six variants, interleaved round by round (one run of each
# per round, RUNS rounds, default 7):
#   heap off:  RHEAPER_ENABLE unset (the baseline), RHEAPER_HEAP=0 with
#              RHEAPER_CPU_HZ=99 and =999 (CPU samples only);
#   heap on:   RHEAPER_ENABLE=1 (the baseline), and with RHEAPER_CPU_HZ=99
#              and =999.
# Each run's CPU time (perf stat's task-clock when perf can count, else user +
# system from /usr/bin/time) and wall time are
# kept; the report gives the medians and the ratio of each sampling variant
# to its baseline of the same heap setting (bars: 99 Hz <= 1.01, 999 Hz <=
# 1.03), the samples one profile of each sampling variant holds, and the load
# average before and after. CPU time is the primary figure: sampling costs CPU,
# and on a loaded machine wall time mostly measures the other processes; the
# minima are given beside the medians. Samples that land inside rheaper's own
# recording are dropped (FORMAT.md), so the heap-on variants write fewer.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build=$root/build runs=7 luan=1000000 out=
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --n) luan=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: cpu_bench.sh [--build DIR] [--runs N] [--n LUAN] [--out DIR]" >&2; exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/bin
[ -x "$bin/rheaper-cc" ] || { echo "FAIL: $bin/rheaper-cc not built" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "FAIL: /usr/bin/time missing (Debian package time)" >&2; exit 1; }

rc=0
sh "$root/tests/e2e/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
[ "$rc" -eq 0 ] && [ -d "$out/lua/src" ] || { echo "FAIL: no Lua source" >&2; exit 1; }
lua=$out/lua-cpu/src/lua
if [ ! -x "$lua" ] || [ "$bin/rheaper-cc" -nt "$lua" ] || [ "$build/lib/librheaper_rt.a" -nt "$lua" ]; then
    rm -rf "$out/lua-cpu" && cp -r "$out/lua/src" "$out/lua-cpu"
    make -s -j2 -C "$out/lua-cpu" linux CC="$bin/rheaper-cc" > "$out/lua-cpu.log" 2>&1 ||
        { echo "FAIL: building Lua; see $out/lua-cpu.log" >&2; exit 1; }
fi

work=$out/cpu-bench
rm -rf "$work" && mkdir -p "$work"
variants="off off-c99 off-c999 heap heap-c99 heap-c999"
envof() {
    case $1 in
    off) echo "RHEAPER_ENABLE=0" ;;
    off-c99) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=99" ;;
    off-c999) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=999" ;;
    heap) echo "RHEAPER_ENABLE=1" ;;
    heap-c99) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=99" ;;
    heap-c999) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=999" ;;
    esac
}
# CPU time from perf stat's task-clock when perf may count (0.01 ms), else
# from /usr/bin/time (10 ms steps)
perf=
if command -v perf >/dev/null 2>&1 && perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
    perf="perf stat -x, -e task-clock -o pstat"
fi
load0=$(cut -d' ' -f1-3 /proc/loadavg)
r=1
while [ "$r" -le "$runs" ]; do
    for v in $variants; do
        d=$work/$v.$r
        mkdir -p "$d"
        # shellcheck disable=SC2046 # the variant's assignments are words
        (cd "$d" && env $(envof "$v") RHEAPER_PROFILE_DIR="$d" /usr/bin/time -f "%U %S %e" -o "$d/time" \
            $perf "$lua" "$here/alloc.lua" "$luan" > "$d/out" 2> "$d/err") ||
            { echo "FAIL: $v run $r; see $d/err" >&2; exit 1; }
        if [ -n "$perf" ]; then # task-clock: ms of CPU, all threads
            cpu=$(awk -F, '$3 == "task-clock" { printf "%.4f", $1 / 1000 }' "$d/pstat")
            awk '{ printf "%s %s %s\n", v, c, $3 }' v="$v" c="$cpu" "$d/time" >> "$work/times"
        else
            awk '{ printf "%s %.3f %s\n", v, $1 + $2, $3 }' v="$v" "$d/time" >> "$work/times"
        fi
        # keep one profile per variant (the first round's): disk, not figures
        [ "$r" -gt 1 ] && rm -f "$d"/rip-*
    done
    r=$((r + 1))
done
load1=$(cut -d' ' -f1-3 /proc/loadavg)

median() { grep "^$1 " "$work/times" | awk -v k="$2" '{ print $k }' | sort -n |
    awk '{ a[NR] = $1 } END { if (NR % 2) print a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# the smallest CPU time of a variant: on a loaded machine other processes only
# ever add to a run's CPU time (cache and memory contention), so the minima
# are the steadier comparison; the medians are what the bar is stated on
least() { grep "^$1 " "$work/times" | awk '{ print $2 }' | sort -n | head -1; }
samples() {
    set -- "$work/$1.1"/rip-*
    [ -f "$1" ] || { echo -; return; }
    "$bin/rheaper-convert" --quiet --force "$1" "$1.db" >/dev/null 2>&1 &&
        sqlite3 "$1.db" "select coalesce(sum(samples), 0) from cpu_stack_stats" 2>/dev/null || echo -
}
{
    echo "# CPU sampling overhead on Lua (alloc.lua $luan), $runs interleaved rounds"
    echo
    echo "load average before: $load0; after: $load1"
    echo
    echo "| variant | CPU s (median) | CPU s (min) | wall s (median) | CPU ratio to its baseline (medians) | ratio of minima | bar | samples in one profile |"
    echo "|---|---|---|---|---|---|---|---|"
    for v in $variants; do
        c=$(median "$v" 2) w=$(median "$v" 3) m=$(least "$v")
        case $v in off*) b=off ;; *) b=heap ;; esac
        base=$(median "$b" 2) mbase=$(least "$b")
        ratio=$(awk -v c="$c" -v b="$base" 'BEGIN { printf "%.3f", (b > 0 ? c / b : 0) }')
        mratio=$(awk -v c="$m" -v b="$mbase" 'BEGIN { printf "%.3f", (b > 0 ? c / b : 0) }')
        case $v in *c999) bar="<= 1.03" ;; *c99) bar="<= 1.01" ;; *) bar="baseline" ;; esac
        s=-
        case $v in *-c*) s=$(samples "$v") ;; esac
        echo "| $v | $c | $m | $w | $ratio | $mratio | $bar | $s |"
    done
} > "$work/results.md"
cat "$work/results.md"
