#!/bin/sh
# tests/integration/memory/run.sh BIN HELPERS WORK CASE: one case of the memory tests (see
# CMakeLists.txt). Prints "FAIL: ..." and exits 1 on a failure. The figures
# checked are ones the program reads itself at the moment of the recording's
# last memory sample (nothing is allocated between its reading and exit).
set -u
BIN=$1 H=$2 WORK=$3 CASE=$4
RH=$BIN/rheaper
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1

. "$(dirname "$0")/../../lib/check.sh"   # fail, ok, eq
. "$(dirname "$0")/../../lib/require.sh" # require_tool
RH_DUMP='out err sum.txt sum.csv churn.csv'
require_tool sqlite3 sqlite3
q() { sqlite3 p.db "$1"; }
# within A B PCT: |A - B| <= PCT % of B
within() { awk -v a="$1" -v b="$2" -v p="$3" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(d <= p / 100 * b) }'; }
# the program's own figure NAME from its line: rss=... live=... ...
own() { tr ' ' '\n' <out | sed -n "s/^$1=//p"; }
# the summary's CSV figure NAME
fig() { sed -n "s/^$1,//p" sum.csv; }

# run PROG MODE [ENV...]: records PROG MODE into p.db, writes the summary.
run() {
    prog=$1 mode=$2
    shift 2
    env RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$WORK" "$@" "$H/$prog" "$mode" >out 2>err ||
        fail "$prog $mode failed"
    set -- rip-*
    [ -f "$1" ] || fail "no profile written"
    "$BIN/rheaper-convert" "$1" p.db >/dev/null 2>>err || fail "conversion failed"
    "$RH" summary p.db >sum.txt 2>>err || fail "rheaper summary failed"
    "$RH" summary --csv p.db >sum.csv 2>>err || fail "rheaper summary --csv failed"
}

# The summary's end figures against the program's own reading: RSS, the heap
# (the program's live bytes, exact up to libc's own few blocks) and, for
# glibc, the arena and its free bytes, each within 5 %; and the share of RSS
# the summary prints against live / rss as the program computes it.
check_end() {
    rss=$(own rss) live=$(own live)
    [ -n "$rss" ] && [ -n "$live" ] || fail "no figures from the program"
    within "$(fig rss_end)" "$rss" 5 || fail "summary's RSS at the end $(fig rss_end), the program read $rss"
    within "$(fig heap_end)" "$live" 1 || fail "summary's heap at the end $(fig heap_end), the program holds $live"
    want=$(awk -v l="$live" -v r="$rss" 'BEGIN { printf "%.1f", 100 * l / r }')
    got=$(sed -n 's/^  *at the end.*the heap explains \([0-9.]*\)%.*/\1/p' sum.txt)
    [ -n "$got" ] || fail "no 'at the end' memory line in the summary"
    within "$got" "$want" 5 || fail "summary says the heap explains $got % of RSS, the program's figures $want %"
}
check_glibc() {
    [ "$(q "select value from meta where key = 'memory_allocator'")" = glibc ] ||
        fail "memory_allocator is not glibc"
    within "$(fig alloc_free_end)" "$(own free)" 5 ||
        fail "summary's arena bytes not in use $(fig alloc_free_end), mallinfo2's fordblks $(own free)"
    a=$(q "select alloc_system from memory where final = 1")
    within "$a" "$(own arena)" 5 || fail "memory.alloc_system $a, mallinfo2's arena $(own arena)"
    grep -q "^allocator *glibc: arena bytes not in use" sum.txt || fail "no allocator line"
}

case $CASE in
frag)
    # many small blocks, every other one freed, then requests too large for
    # the holes: RSS stays at its high-water mark, the live heap is ~60 %
    run mem_prog frag
    rss=$(own rss) live=$(own live)
    awk -v r="$rss" -v l="$live" 'BEGIN { exit !(r > 1.5 * l) }' ||
        fail "the program's RSS $rss is not well above its live heap $live"
    awk -v r="$(fig rss_peak)" -v h="$(fig heap_at_rss_peak)" 'BEGIN { exit !(r > 1.5 * h) }' ||
        fail "summary: RSS at its peak $(fig rss_peak) is not well above the heap then $(fig heap_at_rss_peak)"
    check_end
    check_glibc
    # about 26 MB of holes: the arena's free bytes say so
    awk -v f="$(own free)" 'BEGIN { exit !(f > 20000000) }' || fail "mallinfo2 shows no holes"
    ;;
plain)
    # no fragmentation: the heap explains RSS minus the fixed mappings
    # (program text, libraries, stack, the profile's file mappings)
    run mem_prog plain
    check_end
    check_glibc
    expl=$(awk -v r="$(fig rss_end)" -v f="$(own fixed)" 'BEGIN { print r - f }')
    within "$(fig heap_end)" "$expl" 5 ||
        fail "heap $(fig heap_end) does not explain RSS $(fig rss_end) minus fixed mappings $(own fixed) = $expl"
    ;;
static)
    # -static: mallinfo2 comes from libc.a through a weak reference
    run mem_prog_static plain
    check_end
    check_glibc
    ;;
jemalloc)
    # the allocator is jemalloc: its stats through mallctl
    run mem_prog_je plain
    [ "$(q "select value from meta where key = 'memory_allocator'")" = jemalloc ] ||
        fail "memory_allocator is not jemalloc"
    within "$(fig rss_end)" "$(own rss)" 5 || fail "RSS at the end $(fig rss_end), the program read $(own rss)"
    inuse=$(q "select alloc_in_use from memory where final = 1")
    within "$inuse" "$(own live)" 5 || fail "jemalloc's stats.allocated $inuse, the program holds $(own live)"
    ;;
churn)
    # churn_site allocates and frees 40 000 blocks of 64 KiB; the other sites
    # keep what they allocate
    run mem_prog churn
    "$RH" churn p.db --csv >churn.csv 2>>err || fail "rheaper churn failed"
    head -1 churn.csv | grep -q '^function,location,churn_bytes_per_s,churn_blocks_per_s,freed_bytes,freed_blocks,short_lived,count$' ||
        fail "unexpected header: $(head -1 churn.csv)"
    first=$(sed -n 2p churn.csv | cut -d, -f1)
    [ "$first" = churn_site ] || fail "first churn site is $first, expected churn_site"
    fb=$(sed -n 2p churn.csv | cut -d, -f5) fn=$(sed -n 2p churn.csv | cut -d, -f6)
    [ "$fb" = 2621440000 ] && [ "$fn" = 40000 ] || fail "churn_site freed $fn blocks / $fb bytes, expected 40000 / 2621440000"
    grep -q "^top churn *churn_site " sum.txt || fail "the summary's top churn is not churn_site"
    ;;
interval)
    # RHEAPER_RSS_MS=2: samples never closer than 2 ms (the final one aside),
    # and each taken at the first check past its deadline: the deadline is
    # checked where the thread's writer reaches its fast limit, every 2048
    # bytes of its records (runtime/rh_writer.c RH_DUE_BYTES), and at the
    # record path's slow entries, so between a sample's deadline (its
    # predecessor + 2 ms) and the sample at most one limit's records come:
    # 1024 allocations or frees (a record is at least 2 bytes)
    run mem_prog churn RHEAPER_RSS_MS=2
    [ "$(q "select value from meta where key = 'memory_interval_ms'")" = 2 ] || fail "interval not 2"
    close=$(q "select count(*) from memory a join memory b on b.id = a.id + 1
               where b.final = 0 and b.time - a.time < 2000000 * 0.999")
    [ "$close" = 0 ] || fail "$close samples closer than 2 ms"
    late=$(q "select max(n) from (select (select count(*) from allocations r
               where (r.alloc_after >= a.time + 2002000 and r.alloc_after < b.time)
               or (r.dealloc_after >= a.time + 2002000 and r.dealloc_after < b.time)) as n
               from memory a join memory b on b.id = a.id + 1 where b.final = 0)")
    [ "$late" -le 1024 ] || fail "up to $late events recorded past a deadline before its sample"
    n=$(q "select count(*) from memory")
    [ "$n" -ge 5 ] || fail "only $n samples"
    ;;
off)
    run mem_prog plain RHEAPER_RSS_MS=0
    [ "$(q "select count(*) from memory")" = 0 ] || fail "memory rows with RHEAPER_RSS_MS=0"
    grep -q "^memory" sum.txt && fail "a memory line without samples"
    [ -z "$(fig rss_end)" ] || fail "rss_end without samples"
    ;;
sampled)
    # RHEAPER_SAMPLE_BYTES=64K: RSS and the allocator's figures are still
    # exact, the heap an estimate (about 1000 blocks recorded: within 15 %)
    run mem_prog plain RHEAPER_SAMPLE_BYTES=65536 RHEAPER_SAMPLE_SEED=7
    within "$(fig rss_end)" "$(own rss)" 5 || fail "RSS at the end $(fig rss_end), the program read $(own rss)"
    within "$(fig heap_end)" "$(own live)" 15 || fail "estimated heap $(fig heap_end), the program holds $(own live)"
    check_glibc
    ;;
serve)
    # the server's /memory and /timeline say what summary says
    command -v jq >/dev/null || fail "jq is missing (cmake/quickstart.sh TEST_PKGS)"
    command -v curl >/dev/null || fail "curl is missing"
    run mem_prog frag
    "$RH" serve p.db --listen 127.0.0.1:0 >serve.out 2>serve.err &
    SPID=$!
    i=0 B=
    while [ $i -lt 100 ] && [ -z "$B" ]; do
        port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' serve.out)
        [ -n "$port" ] && B=http://127.0.0.1:$port
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$B" ] || { kill $SPID; fail "the server did not start: $(cat serve.err)"; }
    curl -s -g --max-time 60 -o mem.json "$B/data/last/memory?count=3"
    curl -s -g --max-time 60 -o tl.json "$B/data/last/timeline"
    kill -TERM $SPID
    wait $SPID
    [ "$(jq .memory.end.rss mem.json)" = "$(fig rss_end)" ] || fail "/memory end.rss $(jq .memory.end.rss mem.json), summary $(fig rss_end)"
    [ "$(jq .memory.peak.heap mem.json)" = "$(fig heap_at_rss_peak)" ] || fail "/memory peak.heap differs from summary"
    [ "$(jq .memory.end.alloc_free mem.json)" = "$(fig alloc_free_end)" ] || fail "/memory end.alloc_free differs from summary"
    [ "$(jq -r '.churn[0].function' mem.json)" = small_site ] || fail "/memory churn[0] is not small_site"
    [ "$(jq '.churn | length' mem.json)" -le 3 ] || fail "/memory ignores count"
    [ "$(jq '.rss | length' tl.json)" = "$(jq '.xs | length' tl.json)" ] || fail "/timeline rss is not beside xs"
    [ "$(jq '[.rss[] | select(. != null)] | max' tl.json)" = "$(fig rss_peak)" ] ||
        fail "/timeline's highest rss $(jq '[.rss[] | select(. != null)] | max' tl.json), summary's peak $(fig rss_peak)"
    ;;
ui)
    # the web UI's line under the chart (headless Chromium runs its scripts)
    CHROMIUM=$(command -v chromium || command -v chromium-browser || true)
    [ -n "$CHROMIUM" ] || fail "chromium is missing (cmake/quickstart.sh TEST_PKGS)"
    run mem_prog frag
    "$RH" serve p.db --listen 127.0.0.1:0 >serve.out 2>serve.err &
    SPID=$!
    i=0 B=
    while [ $i -lt 100 ] && [ -z "$B" ]; do
        port=$(sed -n 's/.*http:\/\/127\.0\.0\.1:\([0-9]*\)\/.*/\1/p' serve.out)
        [ -n "$port" ] && B=http://127.0.0.1:$port
        sleep 0.1
        i=$((i + 1))
    done
    [ -n "$B" ] || { kill $SPID; fail "the server did not start: $(cat serve.err)"; }
    timeout 120 "$CHROMIUM" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --user-data-dir="$WORK/chromium" --virtual-time-budget=15000 --dump-dom "$B/" \
        >page.html 2>chromium.err
    kill -TERM $SPID
    wait $SPID
    grep -q 'data-ready="1"' page.html || fail "the page did not load: $(cat chromium.err | tail -3)"
    want=$(awk -v r="$(fig rss_peak)" -v h="$(fig heap_at_rss_peak)" 'BEGIN { print r - h }')
    got=$(sed -n 's/.*id="memory"[^>]*data-unexplained="\([0-9]*\)".*/\1/p; s/.*data-unexplained="\([0-9]*\)"[^>]*id="memory".*/\1/p' page.html | head -1)
    [ "$got" = "$want" ] || fail "the page's memory not explained '$got', summary's $want"
    grep -q 'data-churn="small_site"' page.html || fail "the page's top churn is not small_site"
    grep -q '<b>Memory not explained by the heap</b>: at the RSS peak' page.html || fail "no memory line on the page"
    ;;
pprof)
    # go tool pprof -comments prints the same figures
    command -v go >/dev/null || fail "go is missing (golang-go, cmake/quickstart.sh TEST_PKGS)"
    run mem_prog churn
    "$RH" export --pprof p.pb.gz p.db 2>>err || fail "export --pprof failed"
    go tool pprof -comments p.pb.gz >comments.txt 2>>err || fail "go tool pprof failed"
    grep -q "^rheaper memory at the end: .* rss=$(fig rss_end) heap=$(fig heap_end) " comments.txt ||
        fail "no end figures in the pprof comments: $(cat comments.txt)"
    grep -q "^rheaper top churn: churn_site " comments.txt || fail "no top churn comment: $(cat comments.txt)"
    ;;
timeline)
    # the SVG draws RSS as a line whose highest point is the summary's peak
    run mem_prog frag
    "$RH" timeline p.db -o t.svg 2>>err || fail "rheaper timeline failed"
    top=$(sed -n 's/.*<g class="tl-rss"><polyline[^>]* data-rss="\([^"]*\)".*/\1/p' t.svg | tr ' ' '\n' | sort -n | tail -1)
    [ "$top" = "$(fig rss_peak)" ] || fail "the SVG's RSS line peaks at '$top', summary says $(fig rss_peak)"
    grep -q "RSS (at its peak: RSS" t.svg || fail "no RSS legend"
    "$RH" report p.db -o r.html 2>>err || fail "rheaper report failed"
    grep -q '<section id="memory"><h2>Memory not explained by the heap</h2>' r.html || fail "no memory section in the report"
    grep -q '<tr><td><code>small_site</code></td>' r.html || fail "no churn site in the report"
    ;;
live)
    # live --once --json on the rip and view's source (the database) carry
    # the same RSS samples as the memory table
    command -v jq >/dev/null || fail "jq is missing (cmake/quickstart.sh TEST_PKGS)"
    run mem_prog frag
    set -- rip-*
    "$RH" live "$1" --once --json >live.json 2>>err || fail "rheaper live --once --json failed"
    n=$(jq '.rss | length' live.json)
    [ "$n" = "$(q "select count(*) from memory")" ] || fail "live has $n RSS samples, the table $(q "select count(*) from memory")"
    [ "$(jq '.rss[-1][1]' live.json)" = "$(fig rss_end)" ] || fail "live's last RSS $(jq '.rss[-1][1]' live.json), summary $(fig rss_end)"
    [ "$(jq '[.rss[][1]] | max' live.json)" = "$(fig rss_peak)" ] || fail "live's highest RSS differs from summary's peak"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "ok: $CASE"
