#!/bin/sh
# live.sh: how fast `rheaper live` reads a profile (docs/live.md).
#
#   sh bench/live.sh [--build DIR] [--rounds N] [--runs R]
#
# Records tests/e2e/live/lv_grow.c (built with rheaper-cc) allocating and freeing
# 100 000 blocks N times (default 50: 10 M events), then times, R times
# interleaved (default 5), `rheaper live --once --json RIP` (the follower:
# decode, merge, aggregates, symbols and call sites of everything written)
# against `rheaper-convert RIP DB` of the same file, and prints the medians,
# events per second and the ratio live/convert, with the load average before
# and after. The snapshot's totals are checked against the recorded counts
# (a mismatch prints "FAIL:"); timings are only printed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
build=$here/../../build
rounds=50
runs=5
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    *) echo "usage: sh bench/live.sh [--build DIR] [--rounds N] [--runs R]" >&2; exit 2 ;;
    esac
done
bin=$(cd "$build/bin" && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/rheaper-live-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT
cd "$work"
"$bin/rheaper-cc" -O1 -g -pthread "$here/../tests/e2e/live/lv_grow.c" -o lv_grow
i=0
while [ $i -lt "$rounds" ]; do
    echo "grow 100000 16"
    echo "free 100000"
    i=$((i + 1))
done | RHEAPER_ENABLE=1 ./lv_grow >/dev/null 2>rec.err
rip=$(ls rip-*)
events=$(sed -n 's/.*(\([0-9]*\) events).*/\1/p' rec.err)
echo "rip: $(stat -c %s "$rip") bytes, $events events; load before: $(rh_loadavg)"
now() { date +%s.%N; }
t_live=""
t_conv=""
r=0
while [ $r -lt "$runs" ]; do
    a=$(now)
    "$bin/rheaper" live --once --json "$rip" >snap.json
    b=$(now)
    "$bin/rheaper-convert" --quiet --force "$rip" p.db
    c=$(now)
    t_live="$t_live $(awk "BEGIN {printf \"%.3f\", $b - $a}")"
    t_conv="$t_conv $(awk "BEGIN {printf \"%.3f\", $c - $b}")"
    r=$((r + 1))
done
blocks=$(sed -n 's/.*"alloc_blocks": \([0-9]*\),.*/\1/p' snap.json | head -1)
want=$((rounds * 100000))
[ "$blocks" -ge "$want" ] || { echo "FAIL: snapshot has $blocks allocations, expected >= $want"; exit 1; }
ml=$(echo "$t_live" | rh_median)
mc=$(echo "$t_conv" | rh_median)
printf 'rheaper live --once: median %.2f s (%s), %.2f M events/s\n' "$ml" "$t_live" \
    "$(awk "BEGIN {print $events / $ml / 1000000}")"
printf 'rheaper-convert:     median %.2f s (%s)\n' "$mc" "$t_conv"
printf 'ratio live/convert: %.2f; load after: %s\n' "$(awk "BEGIN {print $ml / $mc}")" \
    "$(rh_loadavg)"
