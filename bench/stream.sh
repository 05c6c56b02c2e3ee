#!/bin/sh
# stream.sh: what streaming to a collector costs against a local rip file
# (docs/streaming.md).
#
#   sh bench/stream.sh [--build DIR] [--runs N] [--pairs N] [--threads N]
#
# Builds workload 1 (wl_synth.c) with rheaper-cc, starts `rheaper collect` on
# an ephemeral 127.0.0.1 port, then runs the workload interleaved: tracked into
# a local file (RHEAPER_PROFILE_DIR) and tracked over RHEAPER_STREAM, N rounds
# each (default 5), PAIRS malloc/free pairs per thread (default 3000000). Prints
# per variant the median wall time and maximum RSS, the stream/local ratios and
# the load average before and after. Both profiles are deleted after each run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/lib.sh" # rh_median, rh_col, ...
root=$(cd "$here/.." && pwd)
build=$root/build runs=5 pairs=3000000 threads=1
while [ $# -gt 0 ]; do
    case $1 in
    --build) build=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --pairs) pairs=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    *) echo "usage: stream.sh [--build DIR] [--runs N] [--pairs N] [--threads N]" >&2; exit 2 ;;
    esac
done
bin=$(cd "$build" && pwd)/bin
timebin=$(command -v /usr/bin/time || true)
[ -x "$timebin" ] || { echo "stream.sh: needs /usr/bin/time (Debian package time)" >&2; exit 1; }
tmp=$(mktemp -d)
cpid=
cleanup() { [ -n "$cpid" ] && kill "$cpid" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
mkdir "$tmp/loc" "$tmp/col"
"$bin/rheaper-cc" -O2 -pthread -o "$tmp/wl_synth" "$here/wl_synth.c"
"$bin/rheaper" collect --listen 127.0.0.1:0 --dir "$tmp/col" >"$tmp/col.out" 2>&1 &
cpid=$!
i=0
while ! grep -q 'listening on' "$tmp/col.out"; do
    i=$((i + 1)); [ $i -lt 500 ] || { echo "collector did not start" >&2; exit 1; }; sleep 0.01
done
port=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' "$tmp/col.out")

# run VARIANT: one tracked run; appends "wall_ms rss_kb" to $tmp/VARIANT
run() {
    rm -f "$tmp/loc"/rip-* "$tmp/col"/rip-*
    t0=$(date +%s%N)
    if [ "$1" = local ]; then
        RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$tmp/loc" "$timebin" -f %M -o "$tmp/rss" \
            "$tmp/wl_synth" "$threads" "$pairs" 2>/dev/null
    else
        RHEAPER_ENABLE=1 RHEAPER_STREAM="127.0.0.1:$port" "$timebin" -f %M -o "$tmp/rss" \
            "$tmp/wl_synth" "$threads" "$pairs" 2>/dev/null
    fi
    t1=$(date +%s%N)
    echo "$(((t1 - t0) / 1000000)) $(cat "$tmp/rss")" >>"$tmp/$1"
}
median() { rh_median; }

echo "load average before: $(rh_loadavg)"
r=0
while [ $r -lt "$runs" ]; do
    run local
    run stream
    r=$((r + 1))
done
echo "load average after: $(rh_loadavg)"
lw=$(cut -d' ' -f1 "$tmp/local" | median) sw=$(cut -d' ' -f1 "$tmp/stream" | median)
lr=$(cut -d' ' -f2 "$tmp/local" | median) sr=$(cut -d' ' -f2 "$tmp/stream" | median)
echo "wl_synth $threads thread(s) x $pairs pairs, $runs interleaved runs each (medians):"
printf '| variant | wall ms | max RSS KiB |\n|---|---|---|\n'
printf '| local file | %s | %s |\n| stream to 127.0.0.1 | %s | %s |\n' "$lw" "$lr" "$sw" "$sr"
awk -v a="$sw" -v b="$lw" -v c="$sr" -v d="$lr" \
    'BEGIN { printf "stream/local: wall %.2fx, max RSS %.2fx\n", a / b, c / d }'
