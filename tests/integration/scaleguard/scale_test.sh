#!/bin/sh
# scale_test.sh BIN_DIR BENCH_DIR WORK_DIR GUARD [ALLOCATIONS]: records the
# scale workload (4 threads, 4096 stacks) with ALLOCATIONS allocations
# (default 1 M), converts it and runs the guard program on the database.
set -eu
bin=$1 bench=$2 work=$3 guard=$4 n=${5:-1000000}
CASE=scaleguard RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh"
rm -rf "$work" && mkdir -p "$work"
"$bin/rheaper-cc" -O2 -pthread -o "$work/wl_scale" "$bench/wl_scale.c" ||
    fail "cannot build wl_scale"
(cd "$work" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$work" \
    ./wl_scale "$n" 4 2> "$work/record.err") || fail "wl_scale: $(cat "$work/record.err")"
rip=$(ls "$work"/rip-* | head -n 1)
"$bin/rheaper-convert" --quiet "$rip" "$work/profile.db" || fail "convert failed"
rm -f "$rip"
RHEAPER_QUIET_NOTICES=1 "$guard" "$work/profile.db" || fail "scale_guard found differences (above)"
ok "scale guard on $n allocations"
