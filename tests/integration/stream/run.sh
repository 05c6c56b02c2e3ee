#!/bin/sh
# tests/integration/stream/run.sh BIN HELPERS WORK CASE: one case of the streaming
# tests (see CMakeLists.txt). Prints "FAIL: ..." and exits 1 on a failure.
# The runtime's "streamed" notice is checked: on stderr although it is no terminal.
export RHEAPER_LOG=stderr
set -u
BIN=$1 H=$2 WORK=$3 CASE=$4
RH=$BIN/rheaper
rm -rf "$WORK" && mkdir -p "$WORK/col" "$WORK/loc" && cd "$WORK" || exit 1
CPID= SPID= PPID_=

fail() {
    echo "FAIL: $CASE: $*"
    for f in col.out col.err out err out.plain; do
        [ -f "$f" ] && { echo "--- $f"; cat "$f"; }
    done
    for p in $CPID $SPID $PPID_; do kill "$p" 2>/dev/null; done
    exit 1
}
q() { sqlite3 "$1" "$2"; }
meta() { q "$1" "select value from meta where key = '$2'"; }

# Waits (up to 30 s) until file $1 has a line matching $2.
wait_line() {
    _w=0
    while ! grep -q "$2" "$1" 2>/dev/null; do
        _w=$((_w + 1))
        [ $_w -gt 3000 ] && fail "timed out waiting for '$2' in $1"
        sleep 0.01
    done
}

# Starts the collector on an ephemeral loopback port: CPID, PORT.
start_collector() {
    "$RH" collect --listen 127.0.0.1:0 --dir col >col.out 2>col.err &
    CPID=$!
    wait_line col.out 'listening on'
    PORT=$(sed -n 's/.*listening on 127\.0\.0\.1:\([0-9]*\),.*/\1/p' col.out)
    [ -n "$PORT" ] || fail "no port in the collector's first line"
}
# Stops it with SIGTERM (a clean stop) and checks its status.
stop_collector() {
    kill -TERM "$CPID"
    wait "$CPID" || fail "collector exited $? after SIGTERM"
    CPID=
    grep -q 'stopped after' col.out || fail "collector did not report its stop"
}
convert() { "$BIN/rheaper-convert" "$1" "$2" --force >/dev/null 2>conv.err || fail "convert $1: $(cat conv.err)"; }
# counts DB [WHERE]: "allocations|bytes|leaked"
counts() {
    q "$1" "select count(*) || '|' || coalesce(sum(size),0) || '|' || coalesce(sum(dealloc_after is null),0) from allocations ${2:-}"
}

# mono: CLOCK_MONOTONIC in ms (/proc/uptime has 10 ms steps)
mono() { awk '{ printf "%d\n", $1 * 1000 }' /proc/uptime; }

case $CASE in
killed-idle | killed-busy)
    # Delivered within a second, busy or idle: the program allocates a
    # 77777-byte block, prints "allocated", then sleeps (idle) or keeps
    # allocating small blocks (busy). The block must reach the collector
    # while the program still runs (polled for up to 5 s; the program runs
    # 120 s), and the profile of the program SIGKILLed afterwards has it,
    # with its function. The time it took is printed, not asserted.
    mode=${CASE#killed-}
    start_collector
    # no memory samples: the busy loop alone fills its chunk, slowly
    RHEAPER_ENABLE=1 RHEAPER_RSS_MS=0 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" "$mode" >out 2>err &
    PPID_=$!
    wait_line out allocated
    t0=$(mono)
    seen=
    for i in $(seq 100); do
        set -- col/rip-*
        if [ -f "$1" ] && "$BIN/rheaper-convert" --quiet --force "$1" poll.db 2>/dev/null &&
            [ "$(q poll.db 'select count(*) from allocations where size = 77777')" = 1 ]; then
            seen=$(($(mono) - t0))
            break
        fi
        sleep 0.05
    done
    kill -0 "$PPID_" 2>/dev/null || fail "the program ended before the block was seen"
    [ -n "$seen" ] || fail "the block allocated before the program went $mode did not reach the collector within 5 s"
    echo "ok: $CASE: the block reached the collector ${seen} ms after the program printed it"
    sleep 1.5
    kill -KILL "$PPID_"
    wait "$PPID_" 2>/dev/null
    PPID_=
    wait_line col.out "no trailer\|cut short"
    stop_collector
    set -- col/rip-*
    [ $# = 1 ] || fail "expected one collected profile, got: $*"
    convert "$1" col.db
    [ "$(q col.db 'select count(*) from allocations where size = 77777')" = 1 ] ||
        fail "the killed program's profile lacks its 77777-byte block"
    fn=$(q col.db "select b.sym from allocations a join backtraces b on b.id = a.bt and b.frame_no = 0 where a.size = 77777")
    [ "$fn" = marker_alloc ] || fail "the block's frame is '$fn', not marker_alloc"
    if [ "$mode" = busy ]; then
        n=$(q col.db 'select count(*) from allocations where size = 24')
        [ "$n" -gt 0 ] || fail "no 24-byte block of the busy loop arrived"
        echo "ok: $CASE: $n blocks of the busy loop arrived"
    fi
    echo "ok: $CASE"
    ;;
partial-rules)
    # Partial chunks by hand (stream_partial.c): one in a version 1 stream and
    # a gap between parts are refused; parts land in their chunk's place (one
    # chunk per slot, its header's used the last part's end), the sealed form
    # replaces them, and a chunk never sealed stays open with what came.
    start_collector
    "$H/stream_partial" "$PORT" >g.out 2>g.err || fail "stream_partial failed: $(cat g.err)"
    grep -q '^sent 3$' g.out || fail "stream_partial: $(cat g.out)"
    for why in 'partial chunk in a version 1 stream' 'partial chunk out of order'; do
        grep -q "$why" col.err || fail "collector did not report '$why'"
    done
    stop_collector
    f=col/rip-515151
    [ -f "$f" ] || fail "no $f: $(ls col)"
    # chunk headers at 4096 and 8192 (slot, used, flags), nothing after them
    size=$(stat -c %s "$f")
    [ "$size" = 12288 ] || fail "the file has $size bytes, expected the header and two 4096-byte chunks"
    # words: magic, type|flags<<8|hsize<<16, capacity, used, crc, slot
    set -- $(od -An -tu4 -j4096 -N24 "$f")
    [ "$6" = 3 ] && [ "$4" = 49 ] && [ $(( ($2 >> 8) & 255 )) = 1 ] ||
        fail "first chunk (slot, used, flags): $6 $4 $(( ($2 >> 8) & 255 )), expected 3 49 1 (sealed)"
    set -- $(od -An -tu4 -j8192 -N24 "$f")
    [ "$6" = 4 ] && [ "$4" = 21 ] && [ $(( ($2 >> 8) & 255 )) = 0 ] ||
        fail "second chunk (slot, used, flags): $6 $4 $(( ($2 >> 8) & 255 )), expected 4 21 0 (open)"
    p=$(od -An -c -j$((8192 + 64)) -N21 "$f" | tr -d ' \n')
    case $p in *aaaa*bbbb*cccc*) ;; *) fail "the open chunk's payload: $p" ;; esac
    # what a reader makes of it: each thread's last name of its records
    "$BIN/rheaper-convert" --quiet "$f" p.db 2>conv.err || fail "convert $f: $(cat conv.err)"
    n=$(q p.db "select group_concat(tid || '=' || name, ' ') from (select * from threads order by tid)")
    [ "$n" = "103=gggg 104=cccc" ] || fail "threads: $n, expected 103=gggg 104=cccc"
    echo "ok: $CASE"
    ;;
match-local)
    # The collected profile converts to the same counts as a local recording.
    start_collector
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" threads >out 2>err ||
        fail "streamed run failed"
    (cd loc && RHEAPER_ENABLE=1 "$H/stream_prog" threads >../out.loc 2>../err.loc) ||
        fail "local run failed"
    grep -q 'threads done' out || fail "program output: $(cat out)"
    wait_line col.out "complete)"
    stop_collector
    set -- col/rip-*
    [ $# = 1 ] && [ -f "$1" ] || fail "expected one collected profile, got: $*"
    grep -q "^rheaper: streamed [0-9]* events to collector 127.0.0.1:$PORT\$" err ||
        fail "no result line"
    [ "$(grep -c . err)" = 1 ] || fail "runtime printed more than one line"
    convert "$1" col.db
    convert loc/rip-* loc.db
    [ "$(meta col.db clean)" = 1 ] || fail "collected profile not clean"
    [ "$(meta col.db events_lost)" = 0 ] || fail "events lost: $(meta col.db events_lost)"
    [ "$(meta col.db streamed_from)" = 127.0.0.1 ] || fail "streamed_from: $(meta col.db streamed_from)"
    [ "$(meta col.db stream_queue_full)" = 0 ] || fail "stream_queue_full set"
    [ -z "$(meta loc.db streamed_from)" ] || fail "a local profile says streamed"
    c=$(counts col.db) l=$(counts loc.db)
    [ "$c" = "$l" ] || fail "collected $c, local $l (allocations|bytes|leaked)"
    [ "$(meta col.db events_recorded)" = "$(meta loc.db events_recorded)" ] ||
        fail "events recorded: collected $(meta col.db events_recorded), local $(meta loc.db events_recorded)"
    # and the numbers the program knows: 4 x 20000 pairs of 16..19 bytes,
    # 4 x 10 leaked blocks of 100..103 bytes, from 4 threads
    n=$(counts col.db "where size between 16 and 19")
    [ "$n" = "80000|1400000|0" ] || fail "pairs: $n"
    n=$(counts col.db "where size between 100 and 103")
    [ "$n" = "40|4060|40" ] || fail "leaked blocks: $n"
    n=$(q col.db "select count(distinct alloc_thread) from allocations where size between 16 and 19")
    [ "$n" = 4 ] || fail "expected 4 threads, got $n"
    # symbolized from the collected file's module map: frame 0 is in worker
    n=$(q col.db "select count(*) from allocations a join backtraces b on b.id = a.bt and b.frame_no = 0 where a.size between 100 and 103 and b.sym = 'worker'")
    [ "$n" = 40 ] || fail "leaked blocks not attributed to worker ($n of 40)"
    ;;
collector-killed)
    # The collector dies (SIGKILL) mid-run: the program finishes as it does
    # without rheaper, with exactly one warning.
    start_collector
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" pause go >out 2>err &
    PPID_=$!
    wait_line out '^phase1'
    wait_line col.out 'streaming into'
    kill -KILL "$CPID"
    wait "$CPID" 2>/dev/null
    CPID=
    touch go
    wait "$PPID_"
    rc=$?
    PPID_=
    "$H/stream_prog" pause go >out.plain 2>err.plain
    rcp=$?
    [ "$rc" = "$rcp" ] || fail "exit status $rc, without rheaper $rcp"
    [ "$rc" = 7 ] || fail "exit status $rc, expected 7"
    cmp -s out out.plain || fail "stdout differs from the run without rheaper"
    [ "$(grep -c . err)" = 1 ] || fail "expected exactly one warning, got $(grep -c . err) lines"
    grep -q '^rheaper: stream to collector 127.0.0.1:'"$PORT"': .*tracking stopped (the program runs on)$' err ||
        fail "warning: $(cat err)"
    # what arrived before the kill converts: damaged or cut short, but readable
    set -- col/rip-*
    [ -f "$1" ] || fail "no partial profile"
    convert "$1" col.db
    [ "$(meta col.db clean)" = 0 ] || fail "a killed collector's profile says clean"
    ;;
fork)
    # Each process streams separately: two files, each with its own counts.
    start_collector
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" fork >out 2>err ||
        fail "program failed"
    ppid=$(sed -n 's/^parent //p' out) cpid=$(sed -n 's/^child //p' out)
    [ -n "$ppid" ] && [ -n "$cpid" ] || fail "no pids in the output"
    wait_line col.out "pid $ppid -> .*complete)"
    wait_line col.out "pid $cpid -> .*complete)"
    stop_collector
    [ "$(ls col | wc -l)" = 2 ] || fail "expected 2 profiles: $(ls col)"
    [ -f "col/rip-$ppid" ] && [ -f "col/rip-$cpid" ] || fail "files: $(ls col)"
    [ "$(grep -c '^rheaper: streamed' err)" = 2 ] || fail "expected one result line per process"
    convert "col/rip-$ppid" parent.db
    convert "col/rip-$cpid" child.db
    for db in parent.db child.db; do
        [ "$(meta $db clean)" = 1 ] || fail "$db not clean"
    done
    [ "$(meta parent.db pid)" = "$ppid" ] || fail "parent.db pid"
    [ "$(meta child.db pid)" = "$cpid" ] || fail "child.db pid"
    n=$(counts parent.db "where size = 111") && [ "$n" = "5|555|5" ] || fail "parent 111: $n"
    n=$(counts parent.db "where size = 333") && [ "$n" = "7|2331|7" ] || fail "parent 333: $n"
    n=$(counts parent.db "where size = 222") && [ "$n" = "0|0|0" ] || fail "parent has the child's blocks: $n"
    n=$(counts child.db "where size = 222") && [ "$n" = "20|4440|3" ] || fail "child 222: $n"
    n=$(counts child.db "where size in (111, 333)") && [ "$n" = "0|0|0" ] || fail "child has the parent's blocks: $n"
    ;;
fd-limit)
    # The program holds every descriptor its limit (16) allows while its
    # threads record: the stream still works, because the sender's socket is
    # in a descriptor table of its own.
    command -v prlimit >/dev/null || fail "prlimit (util-linux) not found"
    start_collector
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT prlimit --nofile=16:16 \
        "$H/stream_prog" threads fill >out 2>err || fail "program failed under --nofile=16"
    grep -q '^filled 13 descriptors from 3$' out || fail "program output: $(cat out)"
    grep -q 'threads done' out || fail "program output: $(cat out)"
    [ "$(grep -c . err)" = 1 ] || fail "runtime printed more than its result line"
    grep -q "^rheaper: streamed" err || fail "no result line: $(cat err)"
    wait_line col.out "complete)"
    stop_collector
    set -- col/rip-*
    convert "$1" col.db
    [ "$(meta col.db clean)" = 1 ] || fail "not clean"
    n=$(counts col.db "where size between 100 and 103")
    [ "$n" = "40|4060|40" ] || fail "leaked blocks: $n"
    ;;
many)
    # Eight programs stream at once: eight complete files, each its own.
    start_collector
    pids=
    for k in 1 2 3 4 5 6 7 8; do
        RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" threads >out.$k 2>err.$k &
        pids="$pids $!"
    done
    for p in $pids; do wait "$p" || fail "a program failed"; done
    i=0
    while [ "$(grep -c 'complete)' col.out)" -lt 8 ]; do
        i=$((i + 1)); [ $i -lt 3000 ] || fail "not 8 complete streams"; sleep 0.01
    done
    stop_collector
    [ "$(ls col | wc -l)" = 8 ] || fail "expected 8 files: $(ls col)"
    for f in col/rip-*; do
        convert "$f" one.db
        [ "$(meta one.db clean)" = 1 ] || fail "$f not clean"
        n=$(counts one.db "where size between 16 and 19")
        [ "$n" = "80000|1400000|0" ] || fail "$f pairs: $n"
        n=$(counts one.db "where size between 100 and 103")
        [ "$n" = "40|4060|40" ] || fail "$f leaked blocks: $n"
    done
    ;;
listen-rules)
    # No authentication: a non-loopback address is refused without --any, and
    # warned about with it; a bad RHEAPER_STREAM keeps tracking off.
    "$RH" collect --listen 0.0.0.0:0 --dir col >out 2>err && fail "0.0.0.0 accepted without --any"
    grep -q 'is not a loopback address; the stream has no authentication' err || fail "message: $(cat err)"
    "$RH" collect --listen 127.0.0.1:0 --dir missing >out 2>err && fail "a missing --dir accepted"
    grep -q 'not a writable directory' err || fail "message: $(cat err)"
    "$RH" collect --listen 0.0.0.0:0 --dir col --any >col.out 2>col.err &
    CPID=$!
    wait_line col.out 'listening on 0\.0\.0\.0:'
    grep -q 'warning: .*not loopback: the stream has no authentication' col.err || fail "no --any warning"
    kill -INT "$CPID"
    wait "$CPID" || fail "collector exited $? after SIGINT"
    CPID=
    RHEAPER_ENABLE=1 RHEAPER_STREAM=example.org:80 "$H/stream_prog" threads >out 2>err || fail "program failed"
    [ "$(grep -c . err)" = 1 ] || fail "expected one warning: $(cat err)"
    grep -q '^rheaper: ignoring RHEAPER_STREAM=example.org:80: .*tracking stays off$' err || fail "warning: $(cat err)"
    ls rip-* col/rip-* >/dev/null 2>&1 && fail "a profile was written"
    ;;
collector-down)
    # Nothing listens: one warning, the program runs as without rheaper.
    start_collector
    stop_collector # its port is now closed
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" threads >out 2>err
    rc=$?
    "$H/stream_prog" threads >out.plain 2>/dev/null
    [ "$rc" = $? ] || fail "exit status $rc differs"
    cmp -s out out.plain || fail "stdout differs"
    [ "$(grep -c . err)" = 1 ] || fail "expected one warning, got: $(cat err)"
    grep -q "^rheaper: stream to collector 127.0.0.1:$PORT: cannot connect: Connection refused; tracking stopped" err ||
        fail "warning: $(cat err)"
    ;;
garbage)
    # Bad input closes only that connection; a real program streams after it
    # and the collector is still there.
    start_collector
    "$H/stream_garbage" "$PORT" >g.out 2>g.err || fail "garbage client failed: $(cat g.err)"
    grep -q '^sent 6$' g.out || fail "garbage client: $(cat g.out)"
    kill -0 "$CPID" 2>/dev/null || fail "collector died"
    for why in 'bad hello magic' 'unsupported stream version 99' 'rip header checksum mismatch' \
        'capacity over 64 MiB' 'stream ended mid-chunk'; do
        grep -q "$why" col.err || fail "collector did not report '$why'"
    done
    # the two streams whose header was good keep what came before the bad
    # part (the 1 GiB chunk, the cut chunk): readable, never clean
    [ "$(ls col | wc -l)" = 2 ] || fail "expected 2 files from the garbage client: $(ls col)"
    for f in col/rip-424242 col/rip-424242.1; do
        [ -f "$f" ] || fail "no $f"
        convert "$f" cut.db
        [ "$(meta cut.db clean)" = 0 ] || fail "$f converts as clean"
    done
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$PORT "$H/stream_prog" threads >out 2>err ||
        fail "program failed"
    wait_line col.out "complete)"
    kill -0 "$CPID" 2>/dev/null || fail "collector died"
    stop_collector
    set -- col/rip-[0-9]*
    good=
    for f in "$@"; do case $f in col/rip-424242*) ;; *) good=$f ;; esac; done
    convert "$good" good.db
    [ "$(meta good.db clean)" = 1 ] || fail "program's profile not clean"
    n=$(counts good.db "where size between 100 and 103")
    [ "$n" = "40|4060|40" ] || fail "leaked blocks: $n"
    ;;
queue-full)
    # The collector cannot keep up (a relay holds the stream back): the 2 MiB
    # queue fills, recording stops with one warning, the profile is closed
    # cleanly and arrives once the relay lets it through; the program runs as
    # without rheaper.
    start_collector
    "$H/stream_stall" "$PORT" relay >stall.out 2>stall.err &
    SPID=$!
    wait_line stall.out '^port '
    SPORT=$(sed -n 's/^port //p' stall.out)
    touch go
    RHEAPER_ENABLE=1 RHEAPER_STREAM=127.0.0.1:$SPORT RHEAPER_STREAM_QUEUE=2M \
        RHEAPER_STREAM_TIMEOUT=120 "$H/stream_prog" pause go 3000000 >out 2>err &
    PPID_=$!
    wait_line out '^finished'
    touch relay
    wait "$PPID_"
    rc=$?
    PPID_=
    wait "$SPID" || fail "relay failed: $(cat stall.err)"
    SPID=
    "$H/stream_prog" pause go 3000000 >out.plain 2>/dev/null
    [ "$rc" = $? ] || fail "exit status $rc differs"
    cmp -s out out.plain || fail "stdout differs"
    [ "$(grep -c . err)" = 2 ] || fail "expected the queue warning and the result line"
    grep -q "^rheaper: stream to 127.0.0.1:$SPORT: queue full (RHEAPER_STREAM_QUEUE=2097152 bytes" err ||
        fail "no queue-full warning"
    grep -q "^rheaper: streamed [0-9]* events to collector 127.0.0.1:$SPORT\$" err || fail "no result line"
    wait_line col.out "complete)"
    stop_collector
    set -- col/rip-*
    convert "$1" col.db
    grep -q "the stream's queue was full (RHEAPER_STREAM_QUEUE)" conv.err || fail "converter: $(cat conv.err)"
    [ "$(meta col.db clean)" = 1 ] || fail "not clean"
    [ "$(meta col.db stream_queue_full)" = 1 ] || fail "stream_queue_full not set"
    lost=$(meta col.db events_lost) rec=$(meta col.db events_recorded) ev=$(meta col.db events)
    [ "$lost" -gt 0 ] || fail "no events counted lost"
    [ $((ev + lost)) = "$rec" ] || fail "decoded $ev + lost $lost != recorded $rec"
    peak=$(meta col.db stream_queue_peak)
    [ "$peak" -gt 1048576 ] && [ "$peak" -le 2097152 ] || fail "queue peak $peak outside (1 MiB, 2 MiB]"
    # phase 1 came before the queue filled: all of it is there
    n=$(counts col.db "where size = 48")
    [ "$n" = "1000|48000|0" ] || fail "phase 1: $n"
    ;;
*)
    fail "unknown case"
    ;;
esac
echo "PASS: $CASE"
