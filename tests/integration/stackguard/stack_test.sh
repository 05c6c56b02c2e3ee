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
# the commands' answers with and without the rows: every command under the
# stack filters, top and summary under the row filters the converter's
# per-stack summaries narrow (the guard program asks the rest)
compare() { # COMMANDS FILTER...
    cmds=$1
    shift
    for c in $cmds; do
        "$bin/rheaper" $c "$@" "$db" > "$work/pre.txt" 2>&1 || fail "rheaper $c $* failed"
        RHEAPER_ROWS=1 "$bin/rheaper" $c "$@" "$db" > "$work/rows.txt" 2>&1 ||
            fail "RHEAPER_ROWS=1 rheaper $c $* failed"
        cmp -s "$work/pre.txt" "$work/rows.txt" ||
            fail "rheaper $c $* differs from the row path: $(diff "$work/pre.txt" "$work/rows.txt" | head -20)"
    done
    ok "$cmds $*: the row path's answers"
}
all="top leaks peak summary"
compare "$all" --function '^step_3$'
compare "$all" --file wl_scale
compare "$all" --kind malloc
compare "$all" --not-function step_3
compare "top summary" --lifetime leaked
compare "top summary" --max-size 20
compare "top summary" --thread 2
compare "top summary" --function '^step_3$' --from 40% --to 60%
"$guard" "$db" || fail "stack_guard found rows read or differences (above)"
ok "stack guard on $n allocations"
