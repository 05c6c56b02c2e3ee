#!/bin/sh
# cpu_bench.sh: the cost of CPU sampling (docs/benchmarks.md). Bars: on the Lua
# workload, 99 Hz costs at most 1 % and 999 Hz at
# most 3 % of the CPU time, with the heap recorded and without.
#
#   sh bench/cpu_bench.sh [--build DIR] [--runs N] [--n LUAN] [--out DIR]
#                               [--pairs N] [--callgrind [N]]
#
# A sample costs microseconds; an end-to-end run on a shared VM varies by tens
# of percent from run to run. So the overhead is measured in three parts and
# put together, and the end-to-end figures are printed beside it, for what they
# are:
#
# 1. The rate delivered. Lua 5.4 (Debian's source, built with rheaper-cc)
#    runs bench/alloc.lua LUAN (default 1000000) at RHEAPER_CPU_HZ=99
#    and =999, heap off (RHEAPER_HEAP=0) and on. From each profile: the
#    signals the handler took (written + dropped samples) and the periods they
#    carry, per second of the run's CPU time (perf stat task-clock, else
#    /usr/bin/time). A thread CPU-time timer expires at most once per kernel
#    tick, so a late signal carries its overrun as extra periods: 999 Hz is
#    ~250 signals per CPU-second on a 250 Hz kernel.
# 2. What one signal costs, where it is large enough to see: bench/
#    cpu_cost.c (built with rheaper-cc) runs PAIRS pairs of equal blocks of
#    work, one block of each pair hit by SIGPROF thousands of times per second
#    and one not, and sums the CPU time of each (see the file). Six variants,
#    interleaved round by round: the signal from a 10 kHz CLOCK_MONOTONIC
#    timer ("timer") or queued by the thread to itself every 100th chain
#    ("self", no timer interrupt), taken by rheaper's handler with the heap
#    off or on, or by the program's own empty handler (SIGUSR1: the signal's
#    delivery alone). Cost per signal = (CPU on - CPU off) / signals.
# 3. Overhead = signals per CPU-second (1) x cost per signal (2), per rate and
#    heap setting, against the bars. The cost is taken two ways: the
#    estimate, the self variant's delivery (an empty handler; an upper bound
#    for a tick-driven signal, since it includes the system call that sends
#    it) plus the handler's own work (rheaper minus empty handler, the
#    largest of the timer and self variants by sums and by median pair); and
#    a bound, the timer variant with
#    rheaper's handler, which also pays this VM's cost of a high-resolution
#    timer interrupt per signal (rheaper's timers ride on the tick, which
#    runs anyway).
# 4. End-to-end, for the record: each of the six Lua variants (heap off and
#    on; no sampling, 99 Hz, 999 Hz) RUNS times, interleaved; median and
#    minimum CPU time, ratio to the baseline of the same heap setting, and
#    the spread of the baseline itself. On a VM these cannot resolve 1 %.
#
# Timing parts use RUNS rounds (default 9); medians and minima over them. The
# load average before and after is printed: other processes slow blocks and
# whole runs, and only the paired blocks of part 2 cancel most of that.
#
# --callgrind [N]: instead, counts instructions (Ir) with valgrind's callgrind
# on alloc.lua N (default 30000): no sampling, 1 Hz (sampling set up, almost
# no samples: the fixed cost), 99 Hz and 999 Hz, heap off and on, one run
# each (counts are immune to the load; Lua's own run-to-run spread is about
# 0.2 %: its string hash seed depends on addresses). Prints Ir, the ratio to
# no sampling, the signals taken, and the handler's own Ir (inclusive, from
# callgrind_annotate) in all, per signal and as a share of the run. Under
# valgrind the program runs ~50 times slower, so its CPU clock takes far more
# samples per instruction than natively: the ratio is a generous bound. The
# kernel's delivery of the signal is not counted (user space only).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build runs=9 luan=1000000 out= pairs=100 cg=0 cgn=30000
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --n) luan=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --callgrind) cg=1; shift
        case ${1-} in [0-9]*) cgn=$1; shift ;; esac ;;
    *) echo "usage: cpu_bench.sh [--build DIR] [--runs N] [--n LUAN] [--out DIR] [--pairs N] [--callgrind [N]]" >&2
       exit 2 ;;
    esac
done
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/bench
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/bin
[ -x "$bin/rheaper-cc" ] || { echo "FAIL: $bin/rheaper-cc not built" >&2; exit 1; }
[ -x /usr/bin/time ] || { echo "FAIL: /usr/bin/time missing (Debian package time)" >&2; exit 1; }
command -v sqlite3 >/dev/null || { echo "FAIL: sqlite3 missing" >&2; exit 1; }

rc=0
sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/lua" || rc=$?
[ "$rc" -eq 0 ] && [ -d "$out/lua/src" ] || { echo "FAIL: no Lua source" >&2; exit 1; }
lua=$out/lua-cpu/src/lua
if [ ! -x "$lua" ] || [ "$bin/rheaper-cc" -nt "$lua" ] || [ "$build/lib/librheaper_rt.a" -nt "$lua" ]; then
    rm -rf "$out/lua-cpu" && cp -r "$out/lua/src" "$out/lua-cpu"
    make -s -j2 -C "$out/lua-cpu" linux CC="$bin/rheaper-cc" > "$out/lua-cpu.log" 2>&1 ||
        { echo "FAIL: building Lua; see $out/lua-cpu.log" >&2; exit 1; }
fi
cost=$out/cpu_cost
if [ ! -x "$cost" ] || [ "$here/cpu_cost.c" -nt "$cost" ] || [ "$build/lib/librheaper_rt.a" -nt "$cost" ]; then
    "$bin/rheaper-cc" -O2 -g -std=gnu11 "$here/cpu_cost.c" -o "$cost" ||
        { echo "FAIL: building cpu_cost" >&2; exit 1; }
fi

# the timing run and the callgrind run keep their results apart
work=$out/cpu-bench
[ "$cg" = 1 ] && work=$out/cpu-bench-cg
rm -rf "$work" && mkdir -p "$work"
envof() {
    case $1 in
    off) echo "RHEAPER_ENABLE=0" ;;
    off-c1) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=1" ;;
    off-c99) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=99" ;;
    off-c999) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=999" ;;
    heap) echo "RHEAPER_ENABLE=1" ;;
    heap-c1) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=1" ;;
    heap-c99) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=99" ;;
    heap-c999) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=999" ;;
    # part 2: rheaper's handler installed (1 Hz of its own), heap off or on
    *-rh-off | *-own) echo "RHEAPER_ENABLE=1 RHEAPER_HEAP=0 RHEAPER_CPU_HZ=1" ;;
    *-rh-on) echo "RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=1" ;;
    esac
}
# signals the handler took in profile $1 and the periods they carried:
# "written dropped periods"
sigs() {
    "$bin/rheaper-convert" --quiet --force "$1" "$1.db" >/dev/null 2>&1 || { echo "- - -"; return; }
    sqlite3 -separator ' ' "$1.db" "select (select value from meta where key = 'cpu_samples'),
        (select value from meta where key = 'cpu_samples_dropped'),
        (select coalesce(sum(periods), 0) from cpu_samples)" 2>/dev/null || echo "- - -"
}
load0=$(rh_loadavg)

# ---- --callgrind: instruction counts -----------------------------------------
if [ "$cg" = 1 ]; then
    command -v valgrind >/dev/null || { echo "FAIL: --callgrind needs valgrind" >&2; exit 1; }
    res=$work/callgrind.md
    {
        echo "# CPU sampling under callgrind: alloc.lua $cgn, one run each (Ir: user-space instructions)"
        echo
        echo "| variant | Ir | ratio to its baseline | signals taken (written + dropped) | handler's Ir (inclusive) | per signal | share of the run |"
        echo "|---|---|---|---|---|---|---|"
    } > "$res"
    for v in off off-c1 off-c99 off-c999 heap heap-c1 heap-c99 heap-c999; do
        d=$work/cg-$v
        mkdir -p "$d"
        # shellcheck disable=SC2046 # the variant's assignments are words
        (cd "$d" && env $(envof "$v") RHEAPER_PROFILE_DIR="$d" valgrind --tool=callgrind \
            --callgrind-out-file="$d/cg.out" "$lua" "$here/alloc.lua" "$cgn" >/dev/null 2>"$d/err") ||
            { echo "FAIL: callgrind $v; see $d/err" >&2; exit 1; }
        ir=$(awk '/^summary:/ { print $2 }' "$d/cg.out")
        echo "$ir" > "$d/ir"
        case $v in off*) b=off ;; *) b=heap ;; esac
        bir=$(cat "$work/cg-$b/ir")
        s=- h=- per=- share=-
        case $v in
        *-c*)
            set -- "$d"/rip-*
            read -r wr dr _ <<EOF
$(sigs "$1")
EOF
            s=$((wr + dr))
            # the handler's own instructions, callees included: exact, where
            # the difference of two runs' totals is within Lua's spread
            h=$(callgrind_annotate --inclusive=yes --auto=no --threshold=100 "$d/cg.out" 2>/dev/null |
                awk '/:rh_cpu_handler / { gsub(",", "", $1); if ($1 + 0 > m) m = $1 + 0 } END { print m + 0 }')
            per=$(awk -v h="$h" -v s="$s" 'BEGIN { printf "%.0f", s ? h / s : 0 }')
            share=$(awk -v h="$h" -v a="$ir" 'BEGIN { printf "%.3f %%", 100 * h / a }') ;;
        esac
        ratio=$(awk -v a="$ir" -v b="$bir" 'BEGIN { printf "%.4f", a / b }')
        echo "| $v | $ir | $ratio | $s | $h | $per | $share |" >> "$res"
    done
    echo >> "$res"
    echo "load average before: $load0 (does not affect the counts)" >> "$res"
    cat "$res"
    exit 0
fi

# CPU time from perf stat's task-clock when perf may count (0.01 ms), else
# from /usr/bin/time (10 ms steps)
perf=
if command -v perf >/dev/null 2>&1 && perf stat -x, -e task-clock -o /dev/null true 2>/dev/null; then
    perf="perf stat -x, -e task-clock -o pstat"
fi
lua_variants="off off-c99 off-c999 heap heap-c99 heap-c999"
cost_variants="timer-rh-off timer-rh-on timer-own self-rh-off self-rh-on self-own"
costargs() {
    case $1 in
    timer-*) a="--hz 10000" ;;
    self-*) a="--self 100" ;;
    esac
    case $1 in *-own) a="$a --own 10" ;; esac
    echo "--pairs $pairs $a"
}
r=1
while [ "$r" -le "$runs" ]; do
    # part 4 (and 1): the Lua runs
    for v in $lua_variants; do
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
        # part 1 from the profiles of CPU-only runs (small) in every round,
        # of heap runs in the first round (disk and conversion time)
        case $v in
        off-c*) set -- "$d"/rip-*
                echo "$v $(sigs "$1") $(grep "^$v " "$work/times" | tail -1 | cut -d' ' -f2)" >> "$work/rates"
                rm -f "$d"/rip-* "$d"/*.db ;;
        heap-c*) if [ "$r" = 1 ]; then
                     set -- "$d"/rip-*
                     echo "$v $(sigs "$1") $(grep "^$v " "$work/times" | tail -1 | cut -d' ' -f2)" >> "$work/rates"
                 fi
                 rm -f "$d"/rip-* "$d"/*.db ;;
        *) rm -f "$d"/rip-* ;;
        esac
    done
    # part 2: the per-signal cost
    for v in $cost_variants; do
        d=$work/$v.$r
        mkdir -p "$d"
        # shellcheck disable=SC2046 # the variant's assignments are words
        (cd "$d" && env $(envof "$v") RHEAPER_PROFILE_DIR="$d" "$cost" $(costargs "$v") > "$d/out" 2> "$d/err") ||
            { echo "FAIL: cpu_cost $v run $r; see $d/err" >&2; exit 1; }
        grep -q "stands aside" "$d/err" && { echo "FAIL: rheaper stood aside in cpu_cost $v; see $d/err" >&2; exit 1; }
        # pairs P work W hz H self N own_signals S sent Q on_wall_ns X on_cpu_ns A off_cpu_ns B median_delta_ns M
        set -- $(cat "$d/out")
        own=${10} on=${16} offc=${18} med=${20}
        case $v in
        *-own) s=$own ;;
        *) set -- "$d"/rip-*
           read -r wr dr _ <<EOF
$(sigs "$1")
EOF
           s=$((wr + dr))
           rm -f "$d"/rip-* "$d"/*.db ;;
        esac
        # per signal, ns: from the sums, and from the median pair
        awk -v v="$v" -v on="$on" -v off="$offc" -v med="$med" -v s="$s" -v p="$pairs" \
            'BEGIN { printf "%s %d %.1f %.1f %.3f\n", v, s, (on - off) / s, med * p / s, off / 1e9 }' >> "$work/costs"
    done
    r=$((r + 1))
done
load1=$(rh_loadavg)

# median / least of column K of the lines of variant V in file F
median() { rh_col "$1" "$2" "$3" | rh_median; }
least() { rh_col "$1" "$2" "$3" | rh_min; }
most() { rh_col "$1" "$2" "$3" | rh_max; }
f1() { awk -v x="$1" 'BEGIN { printf "%.1f", x }'; }

res=$work/results.md
{
    echo "# CPU sampling overhead on Lua (alloc.lua $luan), $runs interleaved rounds"
    echo
    echo "load average before: $load0; after: $load1"
    echo
    echo "## 1. Rate delivered (Lua profiles; heap-on from round 1 only)"
    echo
    echo "| variant | signals taken (median) | periods of the written samples (median) | CPU s | signals per CPU-s | periods per CPU-s |"
    echo "|---|---|---|---|---|---|"
    for v in off-c99 off-c999 heap-c99 heap-c999; do
        # rates: v written dropped periods cpu
        grep "^$v " "$work/rates" | awk '{ print $1, $2 + $3, $4, $5, ($2 + $3) / $5, $4 / $5 }' > "$work/rate-$v"
        sg=$(median "$work/rate-$v" "$v" 2) pe=$(median "$work/rate-$v" "$v" 3) cs=$(median "$work/rate-$v" "$v" 4)
        sps=$(median "$work/rate-$v" "$v" 5) pps=$(median "$work/rate-$v" "$v" 6)
        echo "| $v | $sg | $pe | $cs | $(f1 "$sps") | $(f1 "$pps") |"
        echo "$sps" > "$work/sps-$v"
    done
    echo
    echo "## 2. Cost of one signal (cpu_cost, $pairs pairs of blocks per run), microseconds"
    echo
    echo "| variant | signals per run (median) | us per signal, sums (median) | (min) | us per signal, median pair (median) | CPU s off blocks (median) |"
    echo "|---|---|---|---|---|---|"
    for v in $cost_variants; do
        s=$(median "$work/costs" "$v" 2) a=$(median "$work/costs" "$v" 3) m=$(least "$work/costs" "$v" 3)
        b=$(median "$work/costs" "$v" 4) o=$(median "$work/costs" "$v" 5)
        echo "| $v | $s | $(f1 "$(awk -v x="$a" 'BEGIN { print x / 1000 }')") | $(f1 "$(awk -v x="$m" 'BEGIN { print x / 1000 }')") | $(f1 "$(awk -v x="$b" 'BEGIN { print x / 1000 }')") | $o |"
        awk -v x="$a" 'BEGIN { print x / 1000 }' > "$work/us-$v"
        awk -v x="$b" 'BEGIN { print x / 1000 }' > "$work/usm-$v"
    done
    us() { cat "$work/us-$1"; }
    usm() { cat "$work/usm-$1"; }
    echo
    echo "## 3. Overhead = signals per CPU-s x cost per signal"
    echo
    echo "| rate, heap | signals per CPU-s | estimate: us per signal | estimate: overhead | bound (timer variant): us | bound: overhead | bar | met |"
    echo "|---|---|---|---|---|---|---|---|"
    for h in off on; do
        # the handler's own work: rheaper minus the empty handler, the largest
        # of the two modes and the two statistics (sums, median pair)
        hw=$(awk -v a="$(us "timer-rh-$h")" -v b="$(us timer-own)" -v c="$(us "self-rh-$h")" -v d="$(us self-own)" \
                 -v e="$(usm "timer-rh-$h")" -v f="$(usm timer-own)" -v g="$(usm "self-rh-$h")" -v i="$(usm self-own)" \
            'BEGIN { w = 0; if (a - b > w) w = a - b; if (c - d > w) w = c - d
                     if (e - f > w) w = e - f; if (g - i > w) w = g - i; print w }')
        est=$(awk -v w="$hw" -v d="$(us self-own)" 'BEGIN { print w + d }')
        bnd=$(us "timer-rh-$h")
        for hz in 99 999; do
            case $h in off) v=off-c$hz ;; *) v=heap-c$hz ;; esac
            case $hz in 99) bar=1 ;; *) bar=3 ;; esac
            sps=$(cat "$work/sps-$v")
            awk -v hz="$hz" -v h="$h" -v s="$sps" -v e="$est" -v b="$bnd" -v bar="$bar" 'BEGIN {
                oe = s * e / 1e4; ob = s * b / 1e4
                printf "| %s Hz, heap %s | %.1f | %.1f | %.3f %% | %.1f | %.3f %% | <= %d %% | %s |\n",
                    hz, h, s, e, oe, b, ob, bar, (ob <= bar ? "yes (bound too)" : (oe <= bar ? "yes (estimate)" : "NO")) }'
        done
    done
    echo
    echo "## 4. End to end (noise-bound on a shared VM: read the spread)"
    echo
    echo "| variant | CPU s (median) | CPU s (min) | CPU s (max) | wall s (median) | ratio of medians | ratio of minima | bar |"
    echo "|---|---|---|---|---|---|---|---|"
    for v in $lua_variants; do
        c=$(median "$work/times" "$v" 2) w=$(median "$work/times" "$v" 3)
        m=$(least "$work/times" "$v" 2) x=$(most "$work/times" "$v" 2)
        case $v in off*) b=off ;; *) b=heap ;; esac
        base=$(median "$work/times" "$b" 2) mbase=$(least "$work/times" "$b" 2)
        ratio=$(awk -v c="$c" -v b="$base" 'BEGIN { printf "%.3f", (b > 0 ? c / b : 0) }')
        mratio=$(awk -v c="$m" -v b="$mbase" 'BEGIN { printf "%.3f", (b > 0 ? c / b : 0) }')
        case $v in *c999) bar="<= 1.03" ;; *c99) bar="<= 1.01" ;; *) bar="baseline" ;; esac
        echo "| $v | $c | $m | $x | $w | $ratio | $mratio | $bar |"
    done
} > "$res"
cat "$res"
