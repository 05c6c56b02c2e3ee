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
# (the two meanings, each under its own word). Then a C++ program with long
# template names (webui_cxx.cpp) and Lua (built from its Debian source with
# rheaper-cc, on workload.lua) are served beside them, and the page is checked
# on both: short names with the full one on hover and a toggle, tables within
# 1280 px, the tree opened down to the allocating frame, the flamegraph
# search's highlight and share, the allocation and temporary charts and the
# sizes histogram against SQL over the rows, one site's folded stacks, the
# top lists and rates, the allocation list, profiles told apart, and errors
# (a bad regex, the server gone) that leave no stale figure.
# Screenshots at 1280x800: WORK/shots.
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
# the two runs under one file name in two directories: told apart by path
mkdir -p "$W/run1" "$W/run2"
mv "$W/a.db" "$W/run1/profile.db"
mv "$W/b.db" "$W/run2/profile.db"
ln -s run1/profile.db "$W/a.db"
ln -s run2/profile.db "$W/b.db"
# the C++ program
"$BIN/rheaper-c++" -O1 -o "$W/cxx" "$SRC/webui_cxx.cpp" || { echo "rheaper-c++ failed"; exit 1; }
rm -rf "$W/rec" && mkdir -p "$W/rec"
(cd "$W/rec" && RHEAPER_ENABLE=1 RHEAPER_CPU_HZ=997 ../cxx >/dev/null) || { echo "webui_cxx failed"; exit 1; }
"$BIN/rheaper" convert "$W"/rec/rip-* "$W/cxx.db" --quiet --force || { echo "convert failed"; exit 1; }
# Lua from its Debian source (kept beside the work directory between runs)
LUA_DB=""
rc=0
sh "$SRC/../programs/fetch_source.sh" lua5.4 "$W.lua" || rc=$?
if [ "$rc" -eq 0 ]; then
    rm -rf "$W/lua" && cp -r "$W.lua/src" "$W/lua"
    make -s -C "$W/lua" linux CC="$BIN/rheaper-cc -std=gnu99" >"$W/lua.make.log" 2>&1 ||
        { echo "FAIL: make lua"; cat "$W/lua.make.log"; exit 1; }
    rm -rf "$W/rec" && mkdir -p "$W/rec"
    (cd "$W/rec" && RHEAPER_ENABLE=1 ../lua/src/lua "$SRC/../programs/workload.lua" 4000 >/dev/null) ||
        { echo "lua failed"; exit 1; }
    "$BIN/rheaper" convert "$W"/rec/rip-* "$W/lua.db" --quiet --force || { echo "convert failed"; exit 1; }
    LUA_DB=lua.db
elif [ "${CI:-}" = true ]; then
    echo "FAIL: the Lua source cannot be fetched"
    exit 1
else
    echo "SKIP: the Lua checks (no Lua source)"
fi
rm -rf "$W/rec"
DB=$W/a.db
# what the page must show, from the profile itself
eq "the leak's blocks in the profile" \
    "$(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL AND bt IN (SELECT id FROM backtraces WHERE sym = 'record_metrics')")" 90
cd "$W" && rh_serve run1/profile.db run2/profile.db cxx.db $LUA_DB # relative: the page shows the paths as given
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
# what the C++ and Lua pages must show, from their rows (facts: JSON)
facts() { # DB FLAME_FUNCTION SITE_GLOB
    DB=$1 sq "SELECT json_object(
        'blocks', (SELECT count(*) FROM allocations),
        'temporary', (SELECT sum(temporary) FROM allocations),
        'min_size', (SELECT min(size) FROM allocations), 'max_size', (SELECT max(size) FROM allocations),
        'flame_share', (SELECT 1.0 * sum(size) FROM allocations WHERE bt IN
            (SELECT id FROM backtraces WHERE sym = '$2')) / (SELECT sum(size) FROM allocations),
        'sites', (SELECT json_group_array(DISTINCT b.sym) FROM stacks s JOIN backtraces b
            ON b.id = s.id AND b.frame_no = s.callsite),
        'duration_ns', (SELECT value FROM meta WHERE key = 'duration_ns'),
        'site_sizes', (SELECT json_array(min(a.size), max(a.size)) FROM allocations a WHERE a.bt IN
            (SELECT s.id FROM stacks s JOIN backtraces b ON b.id = s.id AND b.frame_no = s.callsite
             WHERE b.sym GLOB '$3')))"
}
CXX_FACTS=$(facts "$W/cxx.db" 'lower_copy(std::__cxx11::basic_string<char, std::char_traits<char>, std::allocator<char> > const&)' 'WordIndex<*>::add(*)')
LUA_FACTS=null
[ -n "$LUA_DB" ] && LUA_FACTS=$(facts "$W/lua.db" luaH_resize luaH_resize)
DB=$W/cxx.db
eq "the C++ leak's blocks in the profile" \
    "$(sq "SELECT count(*) FROM allocations WHERE dealloc_after IS NULL AND size = 48 AND bt IN (SELECT id FROM backtraces WHERE sym LIKE 'remember_line%')")" 250
FACTS="{\"cxx\":$CXX_FACTS,\"lua\":$LUA_FACTS}" SERVER_PID=$SPID \
    node "$SRC/browser.mjs" "$CHROMIUM" "$B" "$W/shots" "$delta" "$freed_bytes" "$freed_blocks" "$temporary" \
    >"$W/browser.out" 2>&1
st=$?
cat "$W/browser.out"
eq "browser checks" "$st" 0
# the browser test stopped the server (SIGTERM) to see the page without it
kill -TERM "$SPID" 2>/dev/null
wait "$SPID"
eq "server exit status after SIGTERM" "$?" 0
rh_done
