#!/bin/sh
# webui_test.sh: the web UI as a person uses it, in headless Chromium.
# webui_prog.c is recorded with CPU samples twice (with its leak and an 8 MiB
# cache, then "fixed": no leak, the cache doubled), both are served, and
# browser.mjs opens the views and checks what they show: the leak first in
# the leaks view and in the call sites by leaked bytes, one row per site,
# sizes in units, a search narrowing the tree and the flamegraph, the hot
# function in the CPU view, the cache first in the comparison with its
# delta, a bad regex reported beside its field, "temporary" as heaptrack counts
# it on the overview and the freed-blocks flamegraph weighing the freed bytes
# (the two meanings, each under its own word). Screenshots: WORK/shots.
# Without chromium or node it fails under CI=true and skips (77) elsewhere.
#
# usage: webui_test.sh BIN SRC WORK
BIN=$1 SRC=$2 W=$3
. "$SRC/../serve/lib.sh"
. "$SRC/../../lib/require.sh"
require_tool node nodejs
command -v chromium-browser >/dev/null 2>&1 || require_tool chromium chromium
CHROMIUM=$(command -v chromium || command -v chromium-browser)

rec() { # OUT.db [ARG]
    out=$1
    shift
    rm -rf "$W/rec"
    mkdir -p "$W/rec"
    (cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=499 ../prog "$@") || { echo "webui_prog failed"; exit 1; }
    set -- "$W"/rec/rip-*
    "$BIN/rheaper" convert "$1" "$out" --quiet --force || { echo "convert failed"; exit 1; }
    rm -rf "$W/rec"
}
rm -rf "$W"
mkdir -p "$W"
"$BIN/rheaper-cc" -O1 -pthread -o "$W/prog" "$SRC/webui_prog.c" || { echo "rheaper-cc failed"; exit 1; }
rec "$W/a.db"
rec "$W/b.db" fixed
DB=$W/a.db
# what the page must show, from the profile itself
eq "the leak's blocks in the profile" \
    "$(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL AND bt IN (SELECT id FROM backtraces WHERE sym = 'record_metrics')")" 90
cd "$W" && rh_serve a.db b.db # relative: the page shows the paths as given
held() { # DB: the bytes cache_store held at the profile's peak
    DB=$1 sq "SELECT sum(peak_bytes) FROM stack_stats WHERE bt IN (SELECT s.id FROM stacks s JOIN backtraces b ON b.id = s.id AND b.frame_no = s.callsite WHERE b.sym = 'cache_store')"
}
delta=$(($(held "$W/b.db") - $(held "$W/a.db")))
# the freed blocks, and the temporary ones by heaptrack's rule (a free just
# after an allocation of the same size and stack, all threads in time order)
DB=$W/a.db
freed_bytes=$(sq "SELECT sum(size) FROM allocations WHERE dealloc_after IS NOT NULL")
freed_blocks=$(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NOT NULL")
temporary=$(sq "WITH ev(t, k, size, bt) AS (SELECT alloc_after, 1, size, bt FROM allocations UNION ALL
    SELECT dealloc_after, 2, size, bt FROM allocations WHERE dealloc_after IS NOT NULL),
  o AS (SELECT k, size, bt, lag(k) OVER w AS pk, lag(size) OVER w AS ps, lag(bt) OVER w AS pb
    FROM ev WINDOW w AS (ORDER BY t))
  SELECT count(*) FROM o WHERE k = 2 AND pk = 1 AND ps = size AND pb = bt")
node "$SRC/browser.mjs" "$CHROMIUM" "$B" "$W/shots" "$delta" "$freed_bytes" "$freed_blocks" "$temporary" \
    >"$W/browser.out" 2>&1
st=$?
cat "$W/browser.out"
eq "browser checks" "$st" 0
rh_stop
rh_done
