#!/bin/sh
# scale.sh: the scale benchmark (docs/benchmarks.md).
#
#   sh bench/scale.sh [--build DIR] [--out DIR] [--sizes "N ..."] [--runs R]
#                           [--timeout S] [--convert-timeout S] [--convert-runs K]
#                           [--heaptrack-max N] [--no-heaptrack]
#                           [--label TEXT] [--keep] [--tiny]
#
# For each size N (default 10 M and 100 M allocations) it builds
# bench/wl_scale.c with rheaper-cc and with the plain compiler (the same
# flags rheaper-cc adds), records it once with RHEAPER_ENABLE=1 (4 threads),
# records the plain build once under heaptrack (only for N <= --heaptrack-max,
# default 10 M), then runs R rounds (default 3), each round in this order:
#
#   rheaper-convert (wall, peak RSS from /usr/bin/time), rheaper summary, top,
#   leaks, peak, report, top --function '^step_3$', top --from 40% --to 60%,
#   heaptrack_print
#
# so every figure's R runs interleave with the others'. Each step is capped at
# --timeout seconds (default 300; the converter --convert-timeout, default
# 3600); a step that hits the cap in its first round is shown as "> S s" and
# not repeated. --convert-runs K (default R) converts only in the first K
# rounds, for sizes whose conversion takes longer than there is time for; the
# commands still run in every round. It prints, per size, the rip size,
# the medians (min-max) of every step with its ratio to heaptrack_print's, the
# database size and bytes per allocation, the load average before and after,
# and then whether the targets hold (10 M: every unfiltered command
# under 1 s and faster than heaptrack_print, filtered under 5 s, the planted
# leak ranked first; 100 M: unfiltered under 2 s; the converter's peak RSS
# flat from the smallest to the largest size). Writes OUT/scale-results.md
# (default BUILD/scale) and prints it.
#
# Results are checked, timings never: the recorded run's allocation count and
# leaked blocks and bytes must match what rheaper summary reports, and the
# first row of rheaper leaks must not be the decoy; a mismatch prints "FAIL:"
# and exits 1. --tiny (the ctest bench-scale-tiny) runs 20 000 allocations,
# one round, and also checks every EXPECT line of the workload with sqlite3.
# Rips and databases are deleted after each size unless --keep.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build out= sizes="10000000 100000000" runs=3 tmo=300 ctmo=3600 cruns= htmax=10000000
heaptrack=1 label= keep=0 tiny=0
usage() {
    echo "usage: scale.sh [--build DIR] [--out DIR] [--sizes \"N ...\"] [--runs R] [--timeout S]" >&2
    echo "                [--convert-timeout S] [--convert-runs K] [--heaptrack-max N] [--no-heaptrack] [--label TEXT] [--keep] [--tiny]" >&2
    exit 2
}
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --sizes) sizes=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --timeout) tmo=$2; shift 2 ;;
    --convert-timeout) ctmo=$2; shift 2 ;;
    --convert-runs) cruns=$2; shift 2 ;;
    --heaptrack-max) htmax=$2; shift 2 ;;
    --no-heaptrack) heaptrack=0; shift ;;
    --label) label=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --tiny) tiny=1; shift ;;
    *) usage ;;
    esac
done
[ "$tiny" = 1 ] && sizes=20000 runs=1 tmo=120 htmax=20000
[ -n "$cruns" ] || cruns=$runs
build=$(cd "$build" && pwd)
[ -n "$out" ] || out=$build/scale
mkdir -p "$out"
out=$(cd "$out" && pwd)
bin=$build/bin
for t in rheaper-cc rheaper-convert rheaper; do
    [ -x "$bin/$t" ] || { echo "FAIL: $bin/$t not built; run cmake --build $build first" >&2; exit 1; }
done
for t in /usr/bin/time timeout sqlite3; do
    command -v "$t" >/dev/null 2>&1 ||
        { echo "FAIL: $t not found (Debian packages time, coreutils, sqlite3)" >&2; exit 1; }
done
ht=$(command -v heaptrack || true)
htp=$(command -v heaptrack_print || true)
if [ "$heaptrack" = 1 ] && { [ -z "$ht" ] || [ -z "$htp" ]; }; then
    echo "scale: note: heaptrack not found; its column is skipped"
    heaptrack=0
fi

cc=${RHEAPER_CC:-cc}
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
case $(uname -m) in x86_64|i?86|aarch64) ;; *) flags=$(echo "$flags" | sed 's/ -mno-omit-leaf-frame-pointer//') ;; esac
"$cc" $flags -pthread -o "$out/wl_scale.plain" "$here/wl_scale.c"
"$bin/rheaper-cc" -O2 -pthread -o "$out/wl_scale.rh" "$here/wl_scale.c"

steps="convert summary top leaks peak report top_function top_fromto"
unfiltered="summary top leaks peak report"
filtered="top_function top_fromto"
res=$out/scale-results.md
fails=0
fail() { echo "FAIL: $*"; fails=$((fails + 1)); }
now_ns() { date +%s%N; }
loadavg() { rh_loadavg; }

# timed NAME WORKDIR CMD...: runs CMD once under the timeout, stdout to
# WORKDIR/NAME.out (kept from the last run that finished); appends the wall milliseconds (or "timeout") to
# WORKDIR/NAME.ms. A step whose first run hit the cap is not run again.
timed() {
    _n=$1 _w=$2
    shift 2
    if [ "$(grep -c timeout "$_w/$_n.ms" 2>/dev/null)" = 1 ] && ! grep -q '[0-9]' "$_w/$_n.ms"; then
        return 0
    fi
    _t0=$(now_ns)
    _rc=0
    _cap=$tmo
    [ "$_n" = convert ] && _cap=$ctmo
    timeout "$_cap" "$@" > "$_w/$_n.try" 2> "$_w/$_n.err" || _rc=$?
    _t1=$(now_ns)
    if [ "$_rc" = 124 ] || [ "$_rc" = 137 ]; then
        echo timeout >> "$_w/$_n.ms"
    elif [ "$_rc" != 0 ]; then
        fail "$_n exited with $_rc: $(head -c 300 "$_w/$_n.err")"
        echo failed >> "$_w/$_n.ms"
    else
        echo $(( (_t1 - _t0) / 1000000 )) >> "$_w/$_n.ms"
        mv "$_w/$_n.try" "$_w/$_n.out"
    fi
}

# stat_of FILE: "median min max runs timeouts" of the milliseconds in FILE,
# a run that hit the cap counting as longer than any other (median -1 when
# it is one of those); "failed" when a run failed, "none" when there is none.
stat_of() {
    [ -s "$1" ] || { echo none; return; }
    if grep -q failed "$1"; then echo failed; return; fi
    sort -n "$1" | awk '$1 == "timeout" { t++; next } { v[++n] = $1 }
        END { r = n + t; i = int((r + 1) / 2); j = r % 2 ? i : i + 1
              if (j > n) { printf "-1 %d %d %d %d\n", v[1], v[n], r, t; exit }
              printf "%d %d %d %d %d\n", (v[i] + v[j]) / 2, v[1], v[n], r, t }'
}

# fmt_ms STAT: "1.234 s (1.200-1.300)" from stat_of's output.
fmt_ms() {
    case $1 in
    failed|none) echo "$1" ;;
    *) echo "$1" | awk -v cap="$tmo" '{
        if ($1 < 0) { printf "> %d s (%d of %d runs hit the cap", cap, $5, $4
                      if ($5 < $4) printf "; the others %.3f-%.3f s", $2 / 1000, $3 / 1000
                      printf ")"; exit }
        if ($5 > 0) printf "%.3f s (%.3f to over %d s: %d of %d runs hit the cap)", $1 / 1000, $2 / 1000, cap, $5, $4
        else printf "%.3f s (%.3f-%.3f)", $1 / 1000, $2 / 1000, $3 / 1000 }' ;;
    esac
}

# fact NAME FILE: the value of NAME=... in the workload's "wl_scale:" line.
fact() { tr ' ' '\n' < "$2" | sed -n "s/^$1=//p" | head -n 1; }

# the number in "allocated ... in N blocks"-style summary lines
summary_blocks() { sed -n "s/^$1 .* in \([0-9]*\) blocks.*/\1/p" "$2" | head -n 1; }
summary_bytes() { sed -n "s/^$1 *\([0-9]*\) bytes.*/\1/p" "$2" | head -n 1; }

machine="$(nproc) cores, $(uname -m), $(uname -r)"
commit=$(git -C "$root" log -1 --format='%h %s' 2>/dev/null | cut -c1-100 || echo unknown)
{
    echo "### Scale benchmark${label:+: $label}"
    echo
    echo "Build: $build (source commit: $commit); $machine; $runs interleaved round(s)," \
         "medians (min-max); timeout $tmo s per step ($ctmo s for the converter)."
    echo
} > "$res"
rss_first= rss_last=
for n in $sizes; do
    w=$out/n$n
    rm -rf "$w" && mkdir -p "$w"
    la0=$(loadavg)
    # Record once with rheaper, once under heaptrack.
    t0=$(now_ns)
    # Program scope: the counts checked below are the workload's own (the
    # default whole-process scope also records libc's per-thread blocks).
    (cd "$w" && RH_EXPECT_FILE="$w/expect.txt" RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$w" "$out/wl_scale.rh" "$n" 4 2> "$w/record.err") ||
        { fail "recording wl_scale $n failed: $(cat "$w/record.err")"; continue; }
    rec_ms=$(( ($(now_ns) - t0) / 1000000 ))
    rip=$(ls "$w"/rip-* 2>/dev/null | head -n 1)
    [ -n "$rip" ] || { fail "no rip written for $n"; continue; }
    ripsize=$(stat -c %s "$rip")
    htfile=
    if [ "$heaptrack" = 1 ] && [ "$n" -le "$htmax" ]; then
        (cd "$w" && "$ht" -o "$w/ht" "$out/wl_scale.plain" "$n" 4 > "$w/heaptrack.log" 2>&1) ||
            fail "heaptrack run failed: $(tail -n 3 "$w/heaptrack.log")"
        htfile=$(ls "$w"/ht* 2>/dev/null | grep -v heaptrack.log | head -n 1 || true)
        [ -n "$htfile" ] || fail "heaptrack wrote no file"
    fi
    db=$w/profile.db
    r=1
    while [ "$r" -le "$runs" ]; do
        # The converter, with its peak RSS (KiB) from /usr/bin/time.
        if [ "$r" -le "$cruns" ] && { ! grep -q timeout "$w/convert.ms" 2>/dev/null ||
            grep -q '[0-9]' "$w/convert.ms"; }; then
            rm -f "$db"
            timed convert "$w" /usr/bin/time -f '%M' -o "$w/convert.time" \
                "$bin/rheaper-convert" --quiet --force "$rip" "$db"
            [ -s "$w/convert.time" ] && tail -n 1 "$w/convert.time" >> "$w/convert.rss"
        fi
        [ -f "$db" ] || { fail "no database for $n"; break; }
        timed summary "$w" "$bin/rheaper" summary "$db"
        timed top "$w" "$bin/rheaper" top "$db"
        timed leaks "$w" "$bin/rheaper" leaks "$db"
        timed peak "$w" "$bin/rheaper" peak "$db"
        timed report "$w" "$bin/rheaper" report "$db" -o "$w/report.html"
        timed top_function "$w" "$bin/rheaper" top "$db" --function '^step_3$'
        timed top_fromto "$w" "$bin/rheaper" top "$db" --from 40% --to 60%
        [ -n "$htfile" ] && timed heaptrack_print "$w" "$htp" "$htfile"
        r=$((r + 1))
    done
    la1=$(loadavg)

    # Results, checked against the workload's own facts.
    facts=$w/record.err
    allocs=$(fact allocations "$facts")
    [ -n "$allocs" ] || { fail "the workload printed no facts: $(cat "$facts")"; continue; }
    if [ -s "$w/summary.out" ]; then
        got=$(summary_blocks allocated "$w/summary.out")
        [ "$got" = "$allocs" ] || fail "summary: $got allocations, the workload made $allocs"
        got=$(summary_blocks leaked "$w/summary.out")
        [ "$got" = "$(fact leaked_blocks "$facts")" ] ||
            fail "summary: $got leaked blocks, the workload leaked $(fact leaked_blocks "$facts")"
        got=$(summary_bytes leaked "$w/summary.out")
        [ "$got" = "$(fact leaked_bytes "$facts")" ] ||
            fail "summary: $got leaked bytes, the workload leaked $(fact leaked_bytes "$facts")"
    fi
    if [ -n "$htfile" ] && [ -s "$w/heaptrack_print.out" ]; then
        got=$(sed -n 's/^calls to allocation functions: \([0-9]*\).*/\1/p' "$w/heaptrack_print.out")
        [ "${got:-0}" -ge "$allocs" ] ||
            fail "heaptrack recorded ${got:-no} allocation calls of the workload's $allocs"
    fi
    # The first row of `rheaper leaks`: its function column.
    first=
    if [ -s "$w/leaks.out" ]; then
        first=$(awk '!col { for (i = 1; i <= NF; i++) if ($i == "function") col = i; next }
                     { print $col; exit }' "$w/leaks.out")
    fi
    leakfn=$(fact leak_function "$facts") decoyfn=$(fact decoy_function "$facts")
    wrapfn=$(fact wrapper "$facts")
    case $first in
    "$leakfn") leak_first="yes ($leakfn)" ;;
    "$wrapfn") leak_first="yes, but shown as the wrapper $wrapfn (its only leaking stack is $leakfn's)" ;;
    "") leak_first="unknown (leaks did not finish)" ;;
    *) leak_first="NO (first: $first)"; fail "rheaper leaks ranks $first first, not the planted leak" ;;
    esac
    events=$(sqlite3 "$db" "SELECT value FROM meta WHERE key = 'events'" 2>/dev/null || echo 0)
    dbsize=$(stat -c %s "$db")
    rss=$(if [ -s "$w/convert.rss" ]; then rh_median %.0f <"$w/convert.rss"; fi)
    [ -n "$rss_first" ] || rss_first=$rss
    rss_last=$rss

    if [ "$tiny" = 1 ]; then
        . "$root/tests/e2e/programs/expect.sh"
        check_one() {
            _got=$(sqlite3 "$2" "$3" 2>&1) || true
            if [ "$_got" = "$1" ]; then echo "ok: $3 = $1"; else fail "$3: got '$_got', want $1"; fi
        }
        expect_each "$w/expect.txt" "$w" "$db" check_one
    fi

    # The table for this size.
    hts=none
    [ -n "$htfile" ] && hts=$(stat_of "$w/heaptrack_print.ms")
    htmed=$(echo "$hts" | awk '$1 ~ /^[0-9]+$/ { print $1 }')
    {
        echo "#### $n allocations, 4 threads${label:+ ($label)}"
        echo
        echo "Load average before: $la0; after: $la1. Recording took $rec_ms ms" \
             "(one run, tracked); $events events."
        echo
        echo "| step | wall, median (min-max) | vs heaptrack_print | other |"
        echo "|---|---|---|---|"
        echo "| rip | | | $ripsize bytes ($(awk -v b="$ripsize" -v a="$allocs" 'BEGIN { printf "%.1f", b / a }') bytes per allocation) |"
        for s in $steps; do
            st=$(stat_of "$w/$s.ms")
            ratio=
            med=$(echo "$st" | awk '$1 ~ /^[0-9]+$/ { print $1 }')
            [ -n "$med" ] && [ -n "$htmed" ] && [ "$htmed" -gt 0 ] && [ "$s" != convert ] &&
                ratio=$(awk -v a="$med" -v b="$htmed" 'BEGIN { printf "%.2fx", a / b }')
            other=
            case $s in
            convert)
                [ -n "$med" ] && [ "$med" -gt 0 ] &&
                    other="$(awk -v e="$events" -v m="$med" 'BEGIN { printf "%.2f M events/s", e / m / 1000 }'); "
                other="${other}peak RSS $(awk -v k="${rss:-0}" 'BEGIN { printf "%.1f MiB", k / 1024 }'); database $dbsize bytes ($(awk -v b="$dbsize" -v a="$allocs" 'BEGIN { printf "%.1f", b / a }') bytes per allocation)" ;;
            esac
            name=$s
            case $s in
            convert) name=rheaper-convert ;;
            top_function) name="top --function '^step_3\$'" ;;
            top_fromto) name="top --from 40% --to 60%" ;;
            esac
            echo "| \`$name\` | $(fmt_ms "$st") | $ratio | $other |"
        done
        if [ -n "$htfile" ]; then
            echo "| \`heaptrack_print\` | $(fmt_ms "$hts") | 1.00x | on heaptrack's recording of the plain build ($(stat -c %s "$htfile") bytes) |"
        fi
        echo
        echo "Planted leak ranked first by \`rheaper leaks\`: $leak_first."
        echo

        # Targets.
        if [ "$n" -ge 10000000 ]; then
            limit=1000
            [ "$n" -ge 100000000 ] && limit=2000
            for s in $unfiltered; do
                med=$(stat_of "$w/$s.ms" | awk '$1 ~ /^[0-9]+$/ { print $1 }')
                verdict="NOT met"
                if [ -n "$med" ] && [ "$med" -lt "$limit" ]; then
                    verdict=met
                    if [ "$n" -lt 100000000 ] && [ -n "$htmed" ] && [ "$med" -ge "$htmed" ]; then
                        verdict="NOT met (not faster than heaptrack_print)"
                    fi
                fi
                echo "- target: \`$s\` under $((limit / 1000)) s${htmed:+ and faster than heaptrack_print}: $verdict"
            done
            if [ "$n" -lt 100000000 ]; then
                for s in $filtered; do
                    med=$(stat_of "$w/$s.ms" | awk '$1 ~ /^[0-9]+$/ { print $1 }')
                    verdict="NOT met"
                    [ -n "$med" ] && [ "$med" -lt 5000 ] && verdict=met
                    echo "- target: \`$s\` (filtered) under 5 s: $verdict"
                done
                case $leak_first in yes*) v=met ;; *) v="NOT met" ;; esac
                echo "- target: the planted leak ranked first: $v"
            fi
            echo
        fi
    } >> "$res"
    [ "$keep" = 1 ] || rm -f "$rip" "$db" "$w"/ht* "$w/report.html"
done
if [ -n "$rss_first" ] && [ "$rss_first" != "$rss_last" ] || [ "$(echo "$sizes" | wc -w)" -gt 1 ]; then
    awk -v a="${rss_first:-0}" -v b="${rss_last:-0}" 'BEGIN {
        if (a > 0) printf "Converter peak RSS, smallest to largest size: %.1f to %.1f MiB (%.2fx): %s\n\n",
            a / 1024, b / 1024, b / a, b <= a * 1.25 ? "flat (target met)" : "grows (target NOT met)" }' >> "$res"
fi
cat "$res"
[ "$fails" = 0 ] || { echo "FAIL: $fails check(s) failed (see above)"; exit 1; }
