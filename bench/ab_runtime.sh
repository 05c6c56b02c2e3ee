#!/bin/sh
# ab_runtime.sh: the Lua workload under two rheaper builds, before and after a
# runtime change (holding no fd was measured this way;
# docs/benchmarks.md).
#
#   sh bench/ab_runtime.sh OLD_BUILD NEW_BUILD [RUNS] [OUT]
#
# OLD_BUILD and NEW_BUILD are build directories (each with bin/rheaper-cc).
# Builds Lua 5.4 (Debian source, tests/e2e/programs/fetch_source.sh) plain and with each
# rheaper-cc, then runs alloc.lua 300000 interleaved, RUNS rounds (default 7):
# plain, old tracked, new tracked, old tracking off, new tracking off. Prints
# the median CPU time (user + sys, less sensitive to other load on the machine
# than wall time), the median wall time and the ratios to plain, with the load
# average.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
old=$(cd "$1" && pwd) new=$(cd "$2" && pwd)
runs=${3:-7}
out=${4:-$new/bench-ab}
mkdir -p "$out" && out=$(cd "$out" && pwd)
flags="-O2 -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer -fno-optimize-sibling-calls -g1"
sh "$root/tests/e2e/programs/fetch_source.sh" lua5.4 "$out/src" || { echo "ab_runtime: Lua source unavailable"; exit 77; }
for v in plain old new; do
    case $v in plain) c="${CC:-cc} -std=gnu99 $flags" ;; old) c="$old/bin/rheaper-cc -std=gnu99" ;;
        new) c="$new/bin/rheaper-cc -std=gnu99" ;; esac
    rm -rf "$out/lua-$v" && cp -r "$out/src/src" "$out/lua-$v"
    make -s -j2 -C "$out/lua-$v" linux CC="$c" > "$out/lua-$v.log" 2>&1 ||
        { echo "FAIL: building Lua ($v); see $out/lua-$v.log"; exit 1; }
done
mkdir -p "$out/prof"
# one VARIANT: prints "cpu wall" of one run
one() {
    case $1 in
    plain) set -- "$out/lua-plain/src/lua" ;;
    off-*) set -- "$out/lua-${1#off-}/src/lua" ;;
    *) set -- env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$out/prof" "$out/lua-$1/src/lua" ;;
    esac
    rm -f "$out/prof"/rip-*
    s=$(date +%s%N)
    /usr/bin/env time -f '%U %S' -o "$out/time.txt" "$@" "$here/alloc.lua" 300000 > /dev/null 2>&1
    e=$(date +%s%N)
    awk -v w=$(((e - s) / 1000)) '{printf "%.3f %.3f\n", $1 + $2, w / 1e6}' "$out/time.txt"
}
variants="plain old new off-old off-new"
echo "load average before: $(rh_loadavg)"
: > "$out/runs.txt"
i=0
while [ $i -lt "$runs" ]; do
    for v in $variants; do echo "$v $(one $v)" >> "$out/runs.txt"; done
    i=$((i + 1))
done
echo "load average after: $(rh_loadavg)"
med() { rh_col "$out/runs.txt" "$1" "$2" | rh_median; }
pc=$(med plain 2) pw=$(med plain 3)
echo "| variant | CPU median (s) | CPU / plain | wall median (s) | wall / plain |"
echo "|---|--:|--:|--:|--:|"
for v in $variants; do
    c=$(med $v 2) w=$(med $v 3)
    echo "| $v | $c | $(echo "$c $pc" | awk '{printf "%.2f", $1 / $2}') | $w | $(echo "$w $pw" | awk '{printf "%.2f", $1 / $2}') |"
done
echo "($runs interleaved rounds of alloc.lua 300000)"
