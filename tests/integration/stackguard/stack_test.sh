#!/bin/sh
# stack_test.sh BIN_DIR BENCH_DIR WORK_DIR GUARD [ALLOCATIONS]: records the
# scale workload with ALLOCATIONS allocations (default 1 M), converts it,
# compares the commands' answers with the row path's under each filter and
# runs the guard program on the database (CMakeLists.txt says what each
# checks).
set -eu
bin=$1 bench=$2 work=$3 guard=$4 n=${5:-1000000}
CASE=stackguard RH_DUMP=
. "$(dirname "$0")/../../lib/check.sh"
rm -rf "$work" && mkdir -p "$work"
"$bin/rheaper-cc" -O2 -pthread -o "$work/wl_scale" "$bench/wl_scale.c" ||
    fail "cannot build wl_scale"
(cd "$work" && RHEAPER_ENABLE=1 RHEAPER_SCOPE=program RHEAPER_PROFILE_DIR="$work" \
    ./wl_scale "$n" 4 > /dev/null 2> "$work/record.err") || fail "wl_scale: $(cat "$work/record.err")"
rip=$(ls "$work"/rip-* | head -n 1)
"$bin/rheaper-convert" --quiet "$rip" "$work/profile.db" || fail "convert failed"
rm -f "$rip"
db=$work/profile.db
export RHEAPER_QUIET_NOTICES=1
# one filter per line; the commands' answers with and without the rows
for f in "--function ^step_3\$" "--function step_3" "--file wl_scale" "--kind malloc" \
    "--function remember_session" "--function ^nothing_matches\$" "--not-function step_3" \
    "--function ^step_3\$ --not-function step_5" "--function ^step_3\$ --from 40% --to 60%" \
    "--from 40% --to 60%" "--min-size 100 --max-size 2000" "--max-size 20" "--lifetime leaked" \
    "--lifetime temporary" "--lifetime 1ms..1s" "--thread 2" "--function ^step_3\$ --lifetime leaked"; do
    for c in top leaks peak summary; do
        # shellcheck disable=SC2086
        "$bin/rheaper" $c $f "$db" > "$work/pre.txt" 2>&1 || fail "rheaper $c $f failed"
        # shellcheck disable=SC2086
        RHEAPER_ROWS=1 "$bin/rheaper" $c $f "$db" > "$work/rows.txt" 2>&1 ||
            fail "RHEAPER_ROWS=1 rheaper $c $f failed"
        cmp -s "$work/pre.txt" "$work/rows.txt" ||
            fail "rheaper $c $f differs from the row path: $(diff "$work/pre.txt" "$work/rows.txt" | head -20)"
    done
    ok "top, leaks, peak, summary $f: the row path's answers"
done
"$guard" "$db" || fail "stack_guard found rows read or differences (above)"
ok "stack guard on $n allocations"
