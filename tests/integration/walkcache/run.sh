#!/bin/sh
# tests/integration/walkcache: stacks walked with the walk cache equal those walked
# without it (RHEAPER_WALK_CACHE=0), allocation by allocation, on a program
# whose stacks change under the cache (walkcache.cc: twin callers, longjmp,
# C++ exceptions, allocating signal handlers, ucontext coroutines, a thread
# 10 000 deep).
#
#   run.sh BIN_DIR SRC_DIR WORK_DIR
#
# Runs the program with the cache and without, at two depth limits (the
# default and 1024, so that deep walks are cut at different places),
# converts each profile and compares every allocation's size, thread,
# depth, truncation flag and frames (function and line, in order). Also
# checks that the comparison has something to compare: the allocation count
# the program prints, and the scenario functions in the frames; and that it
# can tell stacks apart (the two depth limits must give different dumps). A
# cache that trusted the first equal record instead of comparing the outer
# ones fails here (the twin callers and longjmp give other callers' frames).
set -eu
. "$(dirname "$0")/../../lib/require.sh" # require_tool
require_tool sqlite3 sqlite3
bin=$1 src=$2 work=$3
rm -rf "$work" && mkdir -p "$work"
"$bin/rheaper-c++" -O2 -o "$work/walkcache" "$src/walkcache.cc" -pthread ||
    { echo "FAIL: building walkcache.cc"; exit 1; }
# dump DB: one line per allocation, in recording order
dump() {
    sqlite3 "$1" "
        SELECT a.size || ' t' || a.th || ' d' || s.depth || ' c' || s.truncated || ' ' ||
               (SELECT group_concat(f, ' ') FROM
                   (SELECT coalesce(b.sym, '?') || ':' || coalesce(b.line, 0) ||
                           CASE b.inlined WHEN 0 THEN '' ELSE 'i' END AS f
                    FROM backtraces b WHERE b.id = a.bt ORDER BY b.frame_no))
        FROM alloc_rows a JOIN stacks s ON s.id = a.bt ORDER BY a.th, a.id"
}
fail=0
for depth in 64 1024; do
    for wc in 1 0; do
        d=$work/d$depth-wc$wc
        mkdir -p "$d"
        n=$(RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$d" RHEAPER_MAX_STACK_DEPTH=$depth \
            RHEAPER_WALK_CACHE=$wc "$work/walkcache") || { echo "FAIL: walkcache run ($d)"; exit 1; }
        "$bin/rheaper-convert" --quiet "$d"/rip-* "$d/p.db" || { echo "FAIL: convert $d"; exit 1; }
        dump "$d/p.db" > "$d/stacks.txt"
        # the program's own allocations (the heap coroutine stack included)
        got=$(sqlite3 "$d/p.db" "SELECT count(*) FROM alloc_rows a JOIN backtraces b ON b.id = a.bt
                                 AND b.frame_no = 0 WHERE b.sym IN ('note', 'scenarios')")
        if [ "$got" -ne $((n + 1)) ]; then
            echo "FAIL: $d: $got allocations from note/scenarios, the program made $((n + 1))"
            fail=1
        fi
    done
    a=$work/d$depth-wc1/stacks.txt b=$work/d$depth-wc0/stacks.txt
    for fn in twin_a twin_b lj_down lj_other ex_down ex_other on_signal sig_point co_alloc co_body \
        deep_rec; do
        grep -q " $fn:" "$a" || { echo "FAIL: depth $depth: no stack has $fn"; fail=1; }
    done
    if ! cmp -s "$a" "$b"; then
        echo "FAIL: depth $depth: stacks differ with and without the walk cache:"
        diff "$a" "$b" | head -20
        fail=1
    else
        echo "depth $depth: $(wc -l < "$a") allocations, stacks equal with and without the walk cache"
    fi
done
# the comparison can fail: a run at another depth limit gives other stacks
if cmp -s "$work/d64-wc1/stacks.txt" "$work/d1024-wc1/stacks.txt"; then
    echo "FAIL: the comparison cannot tell two depth limits apart"
    fail=1
fi
[ "$fail" = 0 ] && echo "walkcache: ok"
exit "$fail"
