#!/bin/sh
# tests/integration/inproc/run.sh BIN HELPERS WORK CASE: one case of the in-process
# reports. Prints "FAIL: ..." and exits 1 on a failure.
#   threads: rep_threads' exact per-thread and per-stack figures (CSV and
#            text), the bytes filter and the function filter;
#   signal:  RHEAPER_REPORT_SIGNAL writes both reports to a file;
#   off:     without RHEAPER_REPORTS the calls say so (RHEAPER_ERR_NO_REPORTS);
#   http:    rep_http serves the reports; curl fetches them over 127.0.0.1.
# The runtime's "wrote" notice is checked: on stderr although it is no terminal.
export RHEAPER_LOG=stderr
set -u
BIN=$1 H=$2 WORK=$3 CASE=$4
rm -rf "$WORK" && mkdir -p "$WORK" && cd "$WORK" || exit 1
. "$(dirname "$0")/../../lib/check.sh"   # fail, ok, eq
. "$(dirname "$0")/../../lib/require.sh" # require_tool
RH_DUMP='out err *.csv *.txt'
# row FILE NAME: the CSV line of thread NAME, without tid and name
row() { awk -F, -v n="$2" '$2 == n { sub(/^[^,]*,[^,]*,/, ""); print }' "$1"; }
# site FILE FUNC: in_use_bytes,in_use_blocks,allocs,bytes,frees,freed_bytes of
# the stack whose frame 0 is FUNC
site() { awk -F, -v f="$2" '{ split($9, fn, ";"); sub(/\+.*/, "", fn[1]) } fn[1] == f { print $2 "," $3 "," $4 "," $5 "," $6 "," $7 }' "$1"; }

case $CASE in
threads)
    RHEAPER_ENABLE=1 RHEAPER_REPORTS=1 RHEAPER_PROFILE_DIR="$WORK" "$H/rep_threads" "$WORK" >out 2>err ||
        fail "rep_threads failed"
    # worker_a: 100 x 1000 allocated, 40 freed by itself, 10 by worker_b, 50 live
    [ "$(row threads.csv worker_a)" = "100,100000,40,40000,10,10000,50,50000" ] ||
        fail "worker_a: $(row threads.csv worker_a)"
    # worker_b: 50 x 2000; it freed 10 of worker_a's (10000) and 5 of its own (10000)
    [ "$(row threads.csv worker_b)" = "50,100000,15,20000,0,0,45,90000" ] ||
        fail "worker_b: $(row threads.csv worker_b)"
    grep -Eq '^ +[0-9]+ worker_a +100 +100000 +40 +40000 +10 +10000 +50 +50000$' threads.txt ||
        fail "text thread report"
    [ "$(site sites.csv site_a)" = "50000,50,100,100000,50,50000" ] || fail "site_a: $(site sites.csv site_a)"
    [ "$(site sites.csv site_b)" = "90000,45,50,100000,5,10000" ] || fail "site_b: $(site sites.csv site_b)"
    # frame 1 is the worker, named from the executable's symbol table; raw addresses beside
    grep -q ',0x[0-9a-f]*;0x[0-9a-f]*;.*,site_b+0x[0-9a-f]*;worker_b+0x' sites.csv || fail "site_b's frames"
    # filters: largest first; bytes (60000) keeps site_b only; "site_a" keeps site_a only
    [ "$(sed -n 2p sites.csv | cut -d, -f2)" = 90000 ] || fail "not sorted by bytes in use"
    [ "$(tail -n +2 sites_min.csv | wc -l)" = 1 ] && [ -n "$(site sites_min.csv site_b)" ] ||
        fail "min bytes filter"
    grep -q '^  #0 0x[0-9a-f]* site_a+0x' sites_a.txt && ! grep -q site_b sites_a.txt &&
        grep -q '^# 1 shown' sites_a.txt || fail "function filter"
    echo "ok: exact per-thread and per-stack figures, filters"
    ;;
signal)
    RHEAPER_ENABLE=1 RHEAPER_REPORT_SIGNAL=USR1 RHEAPER_PROFILE_DIR="$WORK" "$H/rep_threads" "$WORK" signal \
        >out 2>err || fail "rep_threads failed"
    set -- rheaper-report-*-1.txt
    [ -f "$1" ] || fail "no report file"
    grep -Eq '^ +[0-9]+ worker_b +50 +100000 +15 +20000 +0 +0 +45 +90000$' "$1" || fail "thread figures"
    grep -q '^stack [0-9]*: 90000 bytes in use in 45 blocks; 50 allocations' "$1" || fail "site figures"
    grep -q 'wrote report' err || fail "no line on stderr"
    echo "ok: the signal wrote $1"
    ;;
off)
    RHEAPER_ENABLE=1 RHEAPER_PROFILE_DIR="$WORK" "$H/rep_threads" "$WORK" >out 2>err && fail "reports without RHEAPER_REPORTS"
    grep -q 'reports rc -6' out || fail "expected RHEAPER_ERR_NO_REPORTS"
    echo "ok: RHEAPER_ERR_NO_REPORTS"
    ;;
http)
    require_tool curl curl
    RHEAPER_ENABLE=1 RHEAPER_REPORTS=1 RHEAPER_PROFILE_DIR="$WORK" "$H/rep_http" port >out 2>err &
    SPID=$!
    i=0
    while [ ! -s port ]; do i=$((i + 1)); [ $i -gt 1000 ] && fail "no port"; sleep 0.01; done
    P=$(cat port)
    curl -sf "http://127.0.0.1:$P/heap/threads" >threads.txt || fail "GET /heap/threads"
    grep -Eq '^ +[0-9]+ rep_http +' threads.txt || fail "no rep_http thread row"
    curl -sf "http://127.0.0.1:$P/heap/callsites?min=100000&fn=cache_fill" >sites.csv || fail "GET /heap/callsites"
    [ "$(site sites.csv cache_fill)" = "122880,30,30,122880,0,0" ] || fail "cache_fill: $(site sites.csv cache_fill)"
    [ "$(tail -n +2 sites.csv | wc -l)" = 1 ] || fail "filter let other stacks through"
    curl -sf "http://127.0.0.1:$P/heap/callsites?min=200000" >none.csv || fail "GET (none)"
    [ "$(wc -l <none.csv)" = 1 ] || fail "min=200000 should leave only the header"
    curl -sf "http://127.0.0.1:$P/quit" >/dev/null
    wait "$SPID" || fail "rep_http failed"
    SPID=
    echo "ok: reports served over HTTP"
    ;;
*) fail "unknown case" ;;
esac
exit 0
